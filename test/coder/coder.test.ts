/**
 * The coder in Node, every kernel (vitest passes --experimental-wasm-relaxed-simd): ISA-L
 * known-answer vectors byte for byte, every erasure pattern up to m for k+m <= 8 and a seeded
 * sample above, scalar-vs-SIMD differential tests, argument errors, and bounded memory.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CoderError, KERNELS, availableKernels, createCoder, type KernelName } from '../../coder-wasm/index.ts';
import { xorshiftBytes } from '../../coder-wasm/runtime.ts';
import { prng, randomBytes } from '../support/random.ts';
import { VECTOR_CASES, erasurePatterns, referenceParity, samplePatterns } from './cases.ts';

const FIXTURES = new URL('../fixtures/rs-cauchy/', import.meta.url).pathname;

describe('kernels', () => {
  it('all three load in Node with relaxed SIMD enabled', () => {
    expect(availableKernels()).toEqual([...KERNELS]);
  });

  it('the parity digests used by the workerd tests agree with the vectors', () => {
    const digests = JSON.parse(readFileSync(FIXTURES + '../rs-cauchy-parity.json', 'utf8'));
    expect(Object.keys(digests).length).toBe(VECTOR_CASES.length);
    for (const v of VECTOR_CASES) {
      const parity = readFileSync(FIXTURES + v.file).subarray(v.k * v.len);
      expect(createHash('sha256').update(parity).digest('hex'), v.file).toBe(digests[v.file]);
    }
  });
});

describe.each(KERNELS.map((k) => [k]))('%s kernel', (kernel: KernelName) => {
  it('matches every ISA-L known-answer vector byte for byte', () => {
    for (const v of VECTOR_CASES) {
      const file = readFileSync(FIXTURES + v.file);
      expect(file.length).toBe((v.k + v.m) * v.len);
      const data = xorshiftBytes(v.seed, v.k * v.len);
      expect(Buffer.compare(file.subarray(0, v.k * v.len), data), `${v.file} data`).toBe(0);
      const coder = createCoder(v.k, v.m, { kernel });
      const stripe = coder.stripe(v.len);
      for (let i = 0; i < v.k; i++) stripe.shard(i).set(data.subarray(i * v.len, (i + 1) * v.len));
      stripe.encode();
      for (let r = 0; r < v.m; r++) {
        const want = file.subarray((v.k + r) * v.len, (v.k + r + 1) * v.len);
        expect(Buffer.compare(stripe.shard(v.k + r), want), `${v.file} parity ${r}`).toBe(0);
      }
      expect(stripe.verify()).toBe(true);
      stripe.free();
      coder.free();
    }
  });

  it('rebuilds every erasure pattern up to m for k+m <= 8, and a seeded sample above', () => {
    const rand = prng(0x5eed);
    const shapes = [...new Map(VECTOR_CASES.map((v) => [`${v.k}+${v.m}`, v])).values()];
    for (const { k, m } of shapes) {
      const n = k + m;
      const patterns = n <= 8 ? erasurePatterns(n, m) : samplePatterns(n, m, 40, rand);
      for (const len of [1, 31, 1000]) {
        const coder = createCoder(k, m, { kernel });
        const shards = Array.from({ length: n }, (_, i) => (i < k ? randomBytes(rand, len) : new Uint8Array(len)));
        coder.encode(shards);
        for (const lost of patterns) {
          const damaged = shards.map((s, i) => (lost.includes(i) ? null : s));
          const rebuilt = coder.reconstruct(damaged);
          for (const i of lost) expect(rebuilt[i], `${k}+${m} len ${len} lost ${lost}`).toEqual(shards[i]);
          const dataOnly = coder.reconstruct(damaged, { dataOnly: true });
          for (const i of lost.filter((i) => i < k)) expect(dataOnly[i]).toEqual(shards[i]);
        }
        coder.free();
      }
    }
  });

  it('stripe.reconstruct rebuilds in place, for a prefix length too', () => {
    const coder = createCoder(6, 3, { kernel });
    const s = coder.stripe(4096);
    const rand = prng(9);
    for (let i = 0; i < 6; i++) s.shard(i).set(randomBytes(rand, 4096));
    s.encode(3000);
    const before = [0, 4, 7].map((i) => s.shard(i).slice(0, 3000));
    for (const i of [0, 4, 7]) s.shard(i).fill(0xee);
    s.reconstruct([false, true, true, true, false, true, true, false, true], { len: 3000 });
    [0, 4, 7].forEach((i, j) => expect(s.shard(i).subarray(0, 3000)).toEqual(before[j]));
    expect(() => s.reconstruct([false, false, false, false, true, true, true, true, true])).toThrow(CoderError);
    s.free();
    coder.free();
  });
});

describe('scalar vs SIMD differential', () => {
  const simdKernels = KERNELS.filter((k) => k !== 'scalar');

  it('agree on every length 1..96 and on random shapes and lengths', () => {
    const rand = prng(42);
    const shapes: [number, number][] = [
      [1, 1],
      [4, 2],
      [6, 3],
      [8, 3],
      [10, 4],
      [12, 4],
      [3, 5],
    ];
    for (let i = 0; i < 12; i++) shapes.push([1 + Math.floor(rand() * 24), Math.floor(rand() * 9)]);
    const lengths = [...Array(96).keys()].map((i) => i + 1).concat([127, 128, 129, 2047, 2048, 2049, 4095, 4096, 4097, 8191, 65539]);
    for (const [k, m] of shapes) {
      const scalar = createCoder(k, m, { kernel: 'scalar' });
      const others = simdKernels.map((kernel) => createCoder(k, m, { kernel }));
      for (const len of lengths) {
        const data = Array.from({ length: k }, () => randomBytes(rand, len));
        const want = [...data, ...Array.from({ length: m }, () => new Uint8Array(len))];
        scalar.encode(want);
        for (const c of others) {
          const got = [...data, ...Array.from({ length: m }, () => new Uint8Array(len))];
          c.encode(got);
          const same = got.every((g, i) => Buffer.compare(g, want[i]!) === 0);
          if (!same) expect(got, `${c.kernel} ${k}+${m} len ${len}`).toEqual(want);
          expect(same).toBe(true);
        }
      }
      [scalar, ...others].forEach((c) => c.free());
    }
  });

  it('scalar agrees with an independent TypeScript encoder', () => {
    const rand = prng(7);
    for (const [k, m, len] of [
      [4, 2, 77],
      [10, 4, 33],
      [17, 3, 5],
    ] as const) {
      const data = Array.from({ length: k }, () => randomBytes(rand, len));
      const shards = [...data, ...Array.from({ length: m }, () => new Uint8Array(len))];
      createCoder(k, m, { kernel: 'scalar' }).encode(shards);
      expect(shards.slice(k)).toEqual(referenceParity(data, m));
    }
  });
});

describe('contracts', () => {
  it('rejects impossible shapes and misuse with CoderError', () => {
    expect(() => createCoder(0, 2)).toThrow(CoderError);
    expect(() => createCoder(200, 57)).toThrow(/k \+ m <= 256/);
    expect(() => createCoder(2.5, 1)).toThrow(CoderError);
    expect(createCoder(255, 1).parityShards).toBe(1);
    expect(createCoder(3, 0).encode.length).toBe(1);
    const c = createCoder(4, 2);
    expect(() => c.encode([new Uint8Array(4)])).toThrow(/need 6 shards/);
    expect(() => c.reconstruct([null, null, null, new Uint8Array(2), new Uint8Array(2), new Uint8Array(2)])).toThrow(/need 4 of 6/);
    const s = c.stripe(16);
    expect(() => s.shard(6)).toThrow(CoderError);
    expect(() => s.encode(17)).toThrow(CoderError);
    s.free();
    expect(() => s.encode()).toThrow(/after free/);
    c.free();
  });

  it('verify catches a single flipped bit in any shard', () => {
    const c = createCoder(4, 2);
    const s = c.stripe(4096);
    const rand = prng(3);
    for (let i = 0; i < 4; i++) s.shard(i).set(randomBytes(rand, 4096));
    s.encode();
    for (const i of [0, 3, 4, 5]) {
      s.shard(i)[1234]! ^= 0x10;
      expect(s.verify(), `shard ${i}`).toBe(false);
      s.shard(i)[1234]! ^= 0x10;
    }
    expect(s.verify()).toBe(true);
    s.free();
  });

  it('wasm memory does not grow when a long-lived isolate encodes many objects', () => {
    const grow = () => {
      const c = createCoder(4, 2);
      const s = c.stripe(256 * 1024);
      s.encode();
      s.reconstruct([false, true, true, true, true, false]);
      s.free();
      c.free();
    };
    for (let i = 0; i < 5; i++) grow();
    const probe = createCoder(1, 1).stripe(1);
    const before = probe.shard(0).buffer.byteLength;
    for (let i = 0; i < 200; i++) grow();
    expect(probe.shard(0).buffer.byteLength).toBe(before);
    probe.free();
  });
});
