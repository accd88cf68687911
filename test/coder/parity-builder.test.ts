/**
 * ParityBuilder (data folded in one shard at a time, ISA-L's encode update) against the stripe
 * encoder, every kernel: the ISA-L known-answer vectors byte for byte, shards added in any order
 * and in blocks of any length, and argument errors.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CoderError, KERNELS, createCoder, type KernelName } from '../../coder-wasm/index.ts';
import { xorshiftBytes } from '../../coder-wasm/runtime.ts';
import { prng, randomBytes } from '../support/random.ts';
import { VECTOR_CASES } from './cases.ts';

const FIXTURES = new URL('../fixtures/rs-cauchy/', import.meta.url).pathname;

describe.each(KERNELS.map((k) => [k]))('%s kernel', (kernel: KernelName) => {
  it("gives the ISA-L vectors' parity, data shard by data shard", () => {
    for (const v of VECTOR_CASES) {
      const file = readFileSync(FIXTURES + v.file);
      const data = xorshiftBytes(v.seed, v.k * v.len);
      const coder = createCoder(v.k, v.m, { kernel });
      const pb = coder.parityBuilder(v.len, v.len);
      for (let i = 0; i < v.k; i++) {
        pb.block().set(data.subarray(i * v.len, (i + 1) * v.len));
        pb.addBlock(i, 0, v.len);
      }
      for (let r = 0; r < v.m; r++) {
        const want = file.subarray((v.k + r) * v.len, (v.k + r + 1) * v.len);
        expect(Buffer.compare(pb.parity(r), want), `${v.file} parity ${r}`).toBe(0);
      }
      pb.free();
      coder.free();
    }
  });

  it("any shard order and any block split give encode's parity; reset starts over", () => {
    const rand = prng(kernel.length);
    for (const [k, m, len, block] of [
      [4, 2, 1000, 64],
      [8, 3, 70_001, 4096],
      [10, 4, 5000, 4999],
      [16, 4, 33, 7],
    ] as const) {
      const data = randomBytes(rand, k * len);
      const coder = createCoder(k, m, { kernel });
      const stripe = coder.stripe(len);
      for (let i = 0; i < k; i++) stripe.shard(i).set(data.subarray(i * len, (i + 1) * len));
      stripe.encode();
      const pb = coder.parityBuilder(len, block);
      for (let round = 0; round < 2; round++) {
        const order = [...Array(k).keys()].sort(() => rand() - 0.5);
        for (const i of order) {
          for (let off = 0; off < len; off += block) {
            const n = Math.min(block, len - off);
            pb.block().set(data.subarray(i * len + off, i * len + off + n));
            pb.addBlock(i, off, n);
          }
        }
        for (let r = 0; r < m; r++) expect(Buffer.compare(pb.parity(r), stripe.shard(k + r)), `${k}+${m} parity ${r}`).toBe(0);
        expect(pb.parityXxh64(0, 0, len)).toBe(stripe.xxh64(k, 0, len));
        pb.reset();
        expect(pb.parity(0).every((b) => b === 0)).toBe(true);
      }
      pb.free();
      stripe.free();
      coder.free();
    }
  });

  it('refuses ranges outside the parity and shards outside 0..k-1', () => {
    const coder = createCoder(4, 2, { kernel });
    const pb = coder.parityBuilder(100, 10);
    expect(() => pb.addBlock(4, 0, 10)).toThrow(CoderError);
    expect(() => pb.addBlock(0, 95, 10)).toThrow(CoderError);
    expect(() => pb.addBlock(0, 0, 11)).toThrow(CoderError);
    expect(() => coder.parityBuilder(10, 11)).toThrow(CoderError);
    pb.free();
    expect(() => pb.block()).toThrow(CoderError);
    coder.free();
  });
});
