/**
 * §10.3 relocation target list pages, shared by both providers so a page means the same bytes everywhere.
 * A page is lines of `<encodeURIComponent(actorId)>\t<expectedAuthorityGeneration>\n`: the encoding keeps tabs and
 * newlines out of ids, so a page parses without escaping (also inside Lua, with one gmatch).
 */
import { createHash } from 'node:crypto';
import type { AggregateMember } from './types';

export const MAX_PAGE_ENTRIES = 1024;
export const MAX_PAGE_BYTES = 1024 * 1024;

export interface EncodedPages {
  readonly pages: string[];
  /** Reported in the header (types.ts) and compared on commit. */
  readonly sha256: string[];
  /** Recomputable inside Redis Lua (redis.sha1hex), which has no sha256: see redis/aggregate-commit.lua. */
  readonly sha1: string[];
}

export function encodePages(members: readonly AggregateMember[]): EncodedPages {
  const pages: string[] = [];
  let lines: string[] = [];
  let bytes = 0;
  for (const member of members) {
    const line = `${encodeURIComponent(member.object.id)}\t${member.expectedAuthorityGeneration}\n`;
    const size = Buffer.byteLength(line);
    if (lines.length === MAX_PAGE_ENTRIES || (lines.length > 0 && bytes + size > MAX_PAGE_BYTES)) {
      pages.push(lines.join(''));
      lines = [];
      bytes = 0;
    }
    lines.push(line);
    bytes += size;
  }
  if (lines.length > 0) pages.push(lines.join(''));
  return { pages, sha256: pages.map((page) => digest('sha256', page)), sha1: pages.map((page) => digest('sha1', page)) };
}

export interface PageEntry {
  readonly actorId: string;
  readonly expectedAuthorityGeneration: number;
}

/** Returns undefined when the text is not a well-formed page (a tampered page is data-lost, never guessed). */
export function decodePage(page: string): PageEntry[] | undefined {
  if (!page.endsWith('\n')) return undefined;
  const entries: PageEntry[] = [];
  for (const line of page.slice(0, -1).split('\n')) {
    const match = /^([^\t]+)\t(\d+)$/.exec(line);
    if (!match) return undefined;
    try {
      entries.push({ actorId: decodeURIComponent(match[1]!), expectedAuthorityGeneration: Number(match[2]) });
    } catch {
      return undefined;
    }
  }
  return entries;
}

export function digest(algorithm: 'sha256' | 'sha1', text: string): string {
  return createHash(algorithm).update(text).digest('hex');
}
