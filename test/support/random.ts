/**
 * Seeded randomness for tests: the same numbers and bytes on every run and in every runtime
 * (Node and workerd), so a failing case replays from its seed.
 */

/** mulberry32: a small seeded PRNG, uniform in [0, 1). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `len` bytes drawn from `rand` (a word at a time), so a misplaced byte shows. */
export function randomBytes(rand: () => number, len: number): Uint8Array {
  const out = new Uint8Array(len);
  const words = new Uint32Array(out.buffer, 0, len >>> 2);
  for (let i = 0; i < words.length; i++) words[i] = rand() * 4294967296;
  for (let i = words.length * 4; i < len; i++) out[i] = (rand() * 256) | 0;
  return out;
}

/** `len` bytes of the sequence `seed`. */
export function seededBytes(len: number, seed = 1): Uint8Array {
  return randomBytes(prng(seed), len);
}
