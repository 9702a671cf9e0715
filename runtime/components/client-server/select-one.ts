/**
 * select-one (§15): one server among the candidates of a ChannelName, with a probability proportional to its
 * weight. Pure: the caller supplies the candidates (already filtered to Serving, Ready servers) and the random source.
 */

export interface Candidate<T> {
  readonly target: T;
  /** Relative share of new calls (> 0). */
  readonly weight: number;
}

/** A number in [0, 1), like Math.random. */
export type RandomSource = () => number;

/** Weighted random choice; undefined when there is no candidate. */
export function selectOne<T>(candidates: readonly Candidate<T>[], random: RandomSource = Math.random): T | undefined {
  if (candidates.length === 0) return undefined;
  if (candidates.length === 1) return candidates[0]!.target;
  let total = 0;
  for (const c of candidates) total += c.weight;
  let point = random() * total;
  for (const c of candidates) {
    point -= c.weight;
    if (point < 0) return c.target;
  }
  // Rounding can leave the point a hair above the last boundary: that is the last candidate's share.
  return candidates[candidates.length - 1]!.target;
}

/** A small seeded generator (mulberry32) for deterministic tests of the spread. */
export function seededRandom(seed: number): RandomSource {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
