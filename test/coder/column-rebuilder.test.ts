/**
 * ColumnRebuilder (lost shards rebuilt by folding k sources in, block by block, in any order)
 * against the stripe's reconstruct, every kernel: wide shapes, sources that are data and parity
 * mixed, interleaved blocks of any length, parity targets too, and argument errors.
 * SyndromeRebuilder (parity syndromes folded from whatever streams): unknown data shards solved
 * byte for byte from any as many syndromes, when the unknown set and the complete syndromes
 * change partway through the column (a source failing mid-pass), and argument errors.
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
      const sources = [...Array(n).keys()]
        .filter((i) => !(lost as readonly number[]).includes(i))
        .reverse()
        .slice(0, k);
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

  it('syndromes: unknowns solved from any as many complete syndromes, the unknown set changing mid-column', () => {
    const rand = prng(kernel.length + 2323);
    for (const [k, m, len, block, unknown, failAt] of [
      [4, 2, 1000, 64, [1], 500],
      [8, 3, 70_001, 4096, [0], 40_960],
      [10, 4, 5000, 1000, [2, 9], 2000],
      [16, 4, 33, 7, [15], 14],
    ] as const) {
      const coder = createCoder(k, m, { kernel });
      const stripe = coder.stripe(len);
      const data = randomBytes(rand, k * len);
      for (let i = 0; i < k; i++) stripe.shard(i).set(data.subarray(i * len, (i + 1) * len));
      stripe.encode();
      const shards = [...Array(k + m).keys()].map((i) => stripe.shard(i).slice());
      // Data shard `late` fails at byte failAt (folded before, unknown after); where there are
      // parities to spare, parity shard k fails there too: its syndrome is complete before only.
      const parityFails = m - 1 >= unknown.length + 1;
      const late = [...Array(k).keys()].find((i) => !(unknown as readonly number[]).includes(i))!;
      const parities = [...Array(m).keys()].map((r) => k + r);
      const sr = coder.syndromeRebuilder(parities, len, block);
      const pieces: [number, number][] = [];
      for (let off = 0; off < len; off += block) {
        for (let i = 0; i < k; i++) if (!(unknown as readonly number[]).includes(i) && !(i === late && off >= failAt)) pieces.push([i, off]);
        for (const p of parities) if (!(parityFails && p === k && off >= failAt)) pieces.push([p, off]);
      }
      for (let i = pieces.length - 1; i > 0; i--) {
        const j = Math.floor(rand() * (i + 1));
        [pieces[i], pieces[j]] = [pieces[j]!, pieces[i]!];
      }
      for (const [s, off] of pieces) {
        const l = Math.min(block, len - off);
        sr.block().set(shards[s]!.subarray(off, off + l));
        if (s < k) sr.addData(s, off, l);
        else sr.addParity(s, off, l);
      }
      for (let off = 0; off < len; off += block) {
        const l = Math.min(block, len - off);
        const after = off >= failAt;
        const unknowns = after ? [...unknown, late].sort((a, b) => a - b) : [...unknown];
        const using = (after && parityFails ? parities.filter((p) => p !== k) : [...parities].reverse()).slice(0, unknowns.length);
        for (const u of unknowns) {
          expect(Buffer.compare(sr.solve(unknowns, using, u, off, l), shards[u]!.subarray(off, off + l)), `${k}+${m} shard ${u} at ${off}`).toBe(0);
        }
      }
      expect(() => sr.solve([...unknown], parities.slice(0, unknown.length + 1), unknown[0]!, 0, 1), 'as many syndromes as unknowns').toThrow(CoderError);
      expect(() => sr.addParity(0, 0, 1), 'a data shard is no syndrome').toThrow(CoderError);
      expect(() => sr.addData(0, len - 1, 2), 'past the column').toThrow(CoderError);
      sr.free();
      expect(() => sr.block()).toThrow(CoderError);
      stripe.free();
      coder.free();
    }
  });
});
