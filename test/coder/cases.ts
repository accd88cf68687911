/// <reference types="vite/client" />
/**
 * Shared helpers for coder tests: the known-answer vector index, a seeded PRNG, and an
 * independent GF(2^8) encoder in plain TypeScript (bitwise multiply, no tables shared with the
 * Rust code) used as a second oracle beside the ISA-L vectors.
 */
import indexTsv from '../fixtures/rs-cauchy/index.tsv?raw';

export interface VectorCase {
  file: string;
  k: number;
  m: number;
  len: number;
  seed: number;
}

export const VECTOR_CASES: VectorCase[] = indexTsv
  .trim()
  .split('\n')
  .slice(1)
  .map((line) => {
    const [file, k, m, len, seed] = line.split('\t');
    return { file: file!, k: +k!, m: +m!, len: +len!, seed: +seed! };
  });

/** mulberry32: a small seeded PRNG so sampled cases are the same on every run. */
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

export function randomBytes(rand: () => number, len: number): Uint8Array {
  const out = new Uint8Array(len);
  const words = new Uint32Array(out.buffer, 0, len >>> 2);
  for (let i = 0; i < words.length; i++) words[i] = rand() * 4294967296;
  for (let i = words.length * 4; i < len; i++) out[i] = (rand() * 256) | 0;
  return out;
}

function gfMulBitwise(a: number, b: number): number {
  let p = 0;
  while (b) {
    if (b & 1) p ^= a;
    a <<= 1;
    if (a & 0x100) a ^= 0x11d;
    b >>= 1;
  }
  return p;
}

function gfInv(a: number): number {
  for (let x = 1; x < 256; x++) if (gfMulBitwise(a, x) === 1) return x;
  throw new Error('0 has no inverse');
}

/** Parity per ISA-L's gf_gen_cauchy1_matrix, computed the slow, obvious way. */
export function referenceParity(data: Uint8Array[], m: number): Uint8Array[] {
  const k = data.length;
  const len = data[0]!.length;
  const parity: Uint8Array[] = [];
  for (let r = k; r < k + m; r++) {
    const out = new Uint8Array(len);
    for (let c = 0; c < k; c++) {
      const coef = gfInv(r ^ c);
      const row = new Uint8Array(256);
      for (let b = 0; b < 256; b++) row[b] = gfMulBitwise(coef, b);
      const d = data[c]!;
      for (let i = 0; i < len; i++) out[i]! ^= row[d[i]!]!;
    }
    parity.push(out);
  }
  return parity;
}

/** Every set of at most m lost shard indices out of n (the empty set excluded). */
export function erasurePatterns(n: number, m: number): number[][] {
  const out: number[][] = [];
  for (let mask = 1; mask < 1 << n; mask++) {
    const lost = [...Array(n).keys()].filter((i) => mask & (1 << i));
    if (lost.length <= m) out.push(lost);
  }
  return out;
}

export function samplePatterns(n: number, m: number, count: number, rand: () => number): number[][] {
  const out: number[][] = [];
  for (let c = 0; c < count; c++) {
    const lostCount = 1 + Math.floor(rand() * m);
    const lost = new Set<number>();
    while (lost.size < lostCount) lost.add(Math.floor(rand() * n));
    out.push([...lost].sort((a, b) => a - b));
  }
  return out;
}
