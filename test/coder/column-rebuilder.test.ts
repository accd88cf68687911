/**
 * ColumnRebuilder (lost shards rebuilt by folding k sources in, block by block, in any order)
 * against the stripe's reconstruct, every kernel: wide shapes, sources that are data and parity
 * mixed, interleaved blocks of any length, parity targets too, and argument errors.
 */
import { describe, expect, it } from 'vitest';
import { CoderError, KERNELS, createCoder, type KernelName } from '../../coder-wasm/index.ts';
import { prng, randomBytes } from '../support/random.ts';

describe.each(KERNELS.map((k) => [k]))('%s kernel', (kernel: KernelName) => {
  it('folded sources, interleaved in any order, give the lost shards byte for byte', () => {
    const rand = prng(kernel.length + 23);
    for (const [k, m, len, block, lost] of [
      [4, 2, 1000, 64, [1]],
      [8, 3, 70_001, 4096, [0, 5]],
      [10, 4, 5000, 4999, [2, 3, 9]],
      [16, 4, 33, 7, [15, 16]],
    ] as const) {
      const n = k + m;
      const coder = createCoder(k, m, { kernel });
      const stripe = coder.stripe(len);
      stripe.shard(0); // fresh view after allocation
      const data = randomBytes(rand, k * len);
      for (let i = 0; i < k; i++) stripe.shard(i).set(data.subarray(i * len, (i + 1) * len));
      stripe.encode();
      const shards = [...Array(n).keys()].map((i) => stripe.shard(i).slice());
      // Sources: every shard not lost, the last ones first (parity before data), k of them.
      const sources = [...Array(n).keys()].filter((i) => !(lost as readonly number[]).includes(i)).reverse().slice(0, k);
      const rb = coder.columnRebuilder(sources, lost, len, block);
      // Blocks in a shuffled order across sources and offsets.
      const pieces = sources.flatMap((s) => Array.from({ length: Math.ceil(len / block) }, (_, j) => [s, j * block] as const));
      for (let i = pieces.length - 1; i > 0; i--) {
        const j = Math.floor(rand() * (i + 1));
        [pieces[i], pieces[j]] = [pieces[j]!, pieces[i]!];
      }
      for (const [s, off] of pieces) {
        const l = Math.min(block, len - off);
        rb.block().set(shards[s]!.subarray(off, off + l));
        rb.addBlock(s, off, l);
      }
      for (const t of lost) expect(Buffer.compare(rb.target(t), shards[t]!), `${k}+${m} shard ${t}`).toBe(0);
      rb.reset();
      expect(rb.target(lost[0]!).every((b) => b === 0)).toBe(true);
      rb.free();
      stripe.free();
      coder.free();
    }
  });

  it('refuses a source set that is not k distinct shards, and targets among the sources', () => {
    const coder = createCoder(4, 2, { kernel });
    expect(() => coder.columnRebuilder([0, 1, 2], [3], 16, 16)).toThrow(CoderError);
    expect(() => coder.columnRebuilder([0, 1, 2, 2], [3], 16, 16)).toThrow(CoderError);
    expect(() => coder.columnRebuilder([0, 1, 2, 4], [2], 16, 16)).toThrow(CoderError);
    const rb = coder.columnRebuilder([0, 1, 2, 4], [3], 16, 8);
    expect(() => rb.addBlock(3, 0, 8)).toThrow(CoderError);
    expect(() => rb.addBlock(0, 12, 8)).toThrow(CoderError);
    rb.free();
    expect(() => rb.target(3)).toThrow(CoderError);
    coder.free();
  });
});
