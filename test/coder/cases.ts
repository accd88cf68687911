/// <reference types="vite/client" />
/**
 * Shared helpers for coder tests: the known-answer vector index and an independent GF(2^8)
 * encoder in plain TypeScript (bitwise multiply, no tables shared with the Rust code) used as a
 * second oracle beside the ISA-L vectors. Seeded data: test/support/random.ts.
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
