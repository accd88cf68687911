/**
 * `*` / `?` patterns (IAM's StringLike and ArnLike, policy Resource and Action, scope bucket
 * patterns), compiled once and matched without backtracking (issue 37: a bucket policy of long
 * patterns made one DeleteObjects request take 7.5-22 s while other tenants waited).
 *
 * A pattern is cut at its stars into segments. The first must match at the value's start, the
 * last at its end, and each middle segment is taken at its leftmost place after the previous one:
 * for glob patterns the leftmost place is always as good as any later one, so no choice is ever
 * revisited and the value is scanned once, left to right. A segment without `?` is found with
 * Knuth-Morris-Pratt (its failure table made at compile time): O(value) for the whole scan. A
 * segment with `?` is found with the bit-parallel Shift-And automaton over 32-bit words: each
 * character costs ceil(segment length / 32) word steps. So a match costs O(pattern + value *
 * ceil(m / 32)) where m is the longest segment holding `?` (0 without any), never
 * pattern x value, and a segment longer than what is left of the value ends it at once.
 * `MatchMeter` counts those steps, so tests bound the work by count, not by time.
 *
 * Compiled patterns are kept (COMPILED_MAX, the oldest dropped first): a policy's patterns are
 * compiled once per isolate, not once per request or per DeleteObjects entry.
 */

/** Counts the character and word steps of matches (tests; a request's budget). */
export interface MatchMeter {
  steps: number;
}

interface Segment {
  text: string;
  /** Positions of `?` in `text`; empty: a literal, found with KMP. */
  wild: boolean;
  /** KMP failure table (literal segments). */
  fail: Int32Array | null;
  /** Shift-And masks per character (wild segments): bit i of word w set when position 32w+i accepts it. */
  masks: Map<string, Uint32Array> | null;
  /** The mask of a character the segment does not name: only its `?` positions. */
  anyMask: Uint32Array | null;
}

export interface Glob {
  matches(value: string, meter?: MatchMeter): boolean;
}

function segment(text: string): Segment {
  const wild = text.includes('?');
  if (!wild) {
    const fail = new Int32Array(text.length + 1);
    fail[0] = -1;
    let k = -1;
    for (let i = 0; i < text.length; i++) {
      while (k >= 0 && text[k] !== text[i]) k = fail[k]!;
      fail[i + 1] = ++k;
    }
    return { text, wild, fail, masks: null, anyMask: null };
  }
  const words = Math.ceil(text.length / 32);
  const anyMask = new Uint32Array(words);
  for (let i = 0; i < text.length; i++) if (text[i] === '?') anyMask[i >>> 5]! |= 1 << (i & 31);
  const masks = new Map<string, Uint32Array>();
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '?') continue;
    let m = masks.get(c);
    if (!m) masks.set(c, (m = Uint32Array.from(anyMask)));
    m[i >>> 5]! |= 1 << (i & 31);
  }
  return { text, wild, fail: null, masks, anyMask };
}

/** Whether `s` matches `v` exactly at `at` (`?` any character). */
function matchesAt(s: Segment, v: string, at: number, meter: MatchMeter | undefined): boolean {
  if (meter) meter.steps += s.text.length;
  for (let i = 0; i < s.text.length; i++) if (s.text[i] !== '?' && s.text[i] !== v[at + i]) return false;
  return true;
}

/** The end of the leftmost match of `s` in v[from, to), or -1. */
function findEnd(s: Segment, v: string, from: number, to: number, meter: MatchMeter | undefined): number {
  const m = s.text.length;
  if (m === 0) return from;
  if (!s.wild) {
    const fail = s.fail!;
    let k = 0;
    for (let j = from; j < to; j++) {
      if (meter) meter.steps++;
      while (k >= 0 && s.text[k] !== v[j]) {
        k = fail[k]!;
        if (meter) meter.steps++;
      }
      if (++k === m) return j + 1;
    }
    return -1;
  }
  const words = s.anyMask!.length;
  const state = new Uint32Array(words);
  const lastWord = (m - 1) >>> 5;
  const lastBit = 1 << ((m - 1) & 31);
  for (let j = from; j < to; j++) {
    if (meter) meter.steps += words;
    const mask = s.masks!.get(v[j]!) ?? s.anyMask!;
    let carry = 1; // a match may start at every position
    for (let w = 0; w < words; w++) {
      const next = state[w]! >>> 31;
      state[w] = ((state[w]! << 1) | carry) & mask[w]!;
      carry = next;
    }
    if (state[lastWord]! & lastBit) return j + 1;
  }
  return -1;
}

function compile(pattern: string): Glob {
  const parts = pattern.split('*').map(segment);
  if (parts.length === 1) {
    const only = parts[0]!;
    return { matches: (v, meter) => v.length === only.text.length && matchesAt(only, v, 0, meter) };
  }
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  const middle = parts.slice(1, -1).filter((p) => p.text.length > 0);
  const least = parts.reduce((n, p) => n + p.text.length, 0);
  return {
    matches(v, meter) {
      if (v.length < least) return false;
      if (!matchesAt(first, v, 0, meter)) return false;
      const end = v.length - last.text.length;
      if (!matchesAt(last, v, end, meter)) return false;
      let at = first.text.length;
      for (const s of middle) {
        if (end - at < s.text.length) return false;
        const found = findEnd(s, v, at, end, meter);
        if (found < 0) return false;
        at = found;
      }
      return true;
    },
  };
}

/** Compiled patterns kept at most (per isolate). */
export const COMPILED_MAX = 4096;
const compiled = new Map<string, Glob>();

/** `pattern` compiled (`*` any run of characters, `?` exactly one, the rest literal; anchored), from the cache when it was compiled before. */
export function glob(pattern: string): Glob {
  let g = compiled.get(pattern);
  if (!g) {
    g = compile(pattern);
    if (compiled.size >= COMPILED_MAX) compiled.delete(compiled.keys().next().value!);
    compiled.set(pattern, g);
  }
  return g;
}
