import { decodePage, digest, encodePages, MAX_PAGE_BYTES, MAX_PAGE_ENTRIES } from './aggregate-pages';

const members = (count: number, idLength = 8) =>
  Array.from({ length: count }, (_, i) => ({ object: { kind: 'actor' as const, id: `${i}`.padStart(idLength, 'x') }, expectedAuthorityGeneration: i }));

test('pages hold at most 1,024 entries: 2,500 members take three pages', () => {
  const encoded = encodePages(members(2500));
  expect(encoded.pages.map((page) => decodePage(page)!.length)).toEqual([MAX_PAGE_ENTRIES, MAX_PAGE_ENTRIES, 452]);
  expect(encoded.sha256[0]).toBe(digest('sha256', encoded.pages[0]!));
});

test('pages stay within 1 MiB encoded when ids are long', () => {
  const encoded = encodePages(members(600, 4000));
  expect(encoded.pages.length).toBeGreaterThanOrEqual(3);
  for (const page of encoded.pages) expect(Buffer.byteLength(page)).toBeLessThanOrEqual(MAX_PAGE_BYTES);
  expect(encoded.pages.flatMap((page) => decodePage(page)!).map((entry) => entry.expectedAuthorityGeneration)).toEqual(
    members(600).map((member) => member.expectedAuthorityGeneration),
  );
});

test('ids with separators round-trip; malformed pages decode to undefined', () => {
  const page = encodePages([{ object: { kind: 'actor', id: 'a\tb\n{c}:d' }, expectedAuthorityGeneration: 3 }]).pages[0]!;
  expect(decodePage(page)).toEqual([{ actorId: 'a\tb\n{c}:d', expectedAuthorityGeneration: 3 }]);
  expect(decodePage('x\t1')).toBeUndefined();
  expect(decodePage('%E0\t1\n')).toBeUndefined();
});
