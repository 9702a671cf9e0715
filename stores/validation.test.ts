import fc from 'fast-check';
import { casSchema, MAX_GENERATION, parse, parseCas } from './validation';

/** parseCas's zod-free fast path must accept exactly what casSchema accepts, and refuse with casSchema's own error. */
describe('parseCas', () => {
  const outcome = (f: () => unknown) => {
    try {
      return { ok: true, value: f() };
    } catch (error) {
      return { ok: false, message: (error as Error).message, name: (error as Error).name };
    }
  };

  const near = <T>(good: fc.Arbitrary<T>) => fc.oneof(good, fc.constant(undefined), fc.constant(null), fc.string(), fc.integer(), fc.double(), fc.constant(-1), fc.constant(MAX_GENERATION + 1), fc.constant(''), fc.constant(1.5), fc.constant({}));
  const objectId = fc.record({ kind: fc.constantFrom('actor', 'spot', 'node'), id: fc.string({ maxLength: 6 }) }, { requiredKeys: [] });
  const nodeRef = fc.record({ nodeId: fc.string({ maxLength: 4 }), lifecycleGeneration: fc.integer({ min: -1, max: 3 }) }, { requiredKeys: [] });
  const request = fc.record(
    {
      object: near(objectId),
      opId: near(fc.string({ maxLength: 300 })),
      expectedAuthorityGeneration: near(fc.integer({ min: 0, max: 5 })),
      owner: near(nodeRef),
      spot: near(fc.string({ maxLength: 3 })),
      spotWide: near(fc.boolean()),
      extra: fc.integer(),
    },
    { requiredKeys: [] },
  );

  test('same verdict and the same error as the schema, for plain and malformed requests alike', () => {
    fc.assert(
      fc.property(request, (value) => {
        const fast = outcome(() => parseCas(value, 'casMany[3]'));
        const slow = outcome(() => parse(casSchema, value, 'casMany[3]'));
        expect(fast.ok).toBe(slow.ok);
        if (fast.ok) expect(fast.value).toEqual(slow.value);
        else expect(fast).toEqual(slow);
      }),
      { numRuns: 3000 },
    );
  });

  test('the plain request the runtime sends passes; a bad field is named', () => {
    const good = { object: { kind: 'actor', id: 'a1' }, opId: 'reloc:u1', expectedAuthorityGeneration: 3, owner: { nodeId: 't', lifecycleGeneration: 2 } };
    expect(parseCas(good, 'cas')).toEqual(good);
    expect(() => parseCas({ ...good, expectedAuthorityGeneration: -1 }, 'casMany[0]')).toThrow(/casMany\[0\]: field 'expectedAuthorityGeneration'/);
    expect(() => parseCas({ ...good, owner: { nodeId: 't' } }, 'cas')).toThrow(/field 'owner.lifecycleGeneration'/);
    expect(() => parseCas({ ...good, extra: 1 }, 'cas')).toThrow(TypeError);
  });
});
