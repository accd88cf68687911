/**
 * The coder inside workerd, the runtime the gateway ships on: relaxed SIMD is picked, every
 * kernel reproduces the ISA-L vectors (compared by SHA-256 of the parity bytes, since workerd
 * tests cannot read the .bin files; coder.test.ts checks those digests against the files),
 * erasure patterns are rebuilt, and the checksums give their check values.
 */
import { describe, expect, it } from 'vitest';
import { KERNELS, activeKernel, availableKernels, checksums, createCoder } from '../../coder-wasm/index.ts';
import { xorshiftBytes } from '../../coder-wasm/runtime.ts';
import digests from '../fixtures/rs-cauchy-parity.json';
import { prng, randomBytes } from '../support/random.ts';
import { VECTOR_CASES, erasurePatterns } from './cases.ts';

async function sha256Hex(parts: Uint8Array[]): Promise<string> {
  const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let off = 0;
  for (const p of parts) all.set(p, (off += p.length) - p.length);
  const d = new Uint8Array(await crypto.subtle.digest('SHA-256', all));
  return [...d].map((b) => b.toString(16).padStart(2, '0')).join('');
}

describe('coder in workerd', () => {
  it('loads every kernel and picks relaxed SIMD', () => {
    expect(availableKernels()).toEqual([...KERNELS]);
    expect(activeKernel()).toBe('relaxed-simd');
  });

  it.each(KERNELS.map((k) => [k]))('%s matches every ISA-L vector', async (kernel) => {
    for (const v of VECTOR_CASES) {
      const coder = createCoder(v.k, v.m, { kernel });
      const s = coder.stripe(v.len);
      const data = xorshiftBytes(v.seed, v.k * v.len);
      for (let i = 0; i < v.k; i++) s.shard(i).set(data.subarray(i * v.len, (i + 1) * v.len));
      s.encode();
      const parity = Array.from({ length: v.m }, (_, r) => s.shard(v.k + r).slice());
      expect(await sha256Hex(parity), v.file).toBe((digests as Record<string, string>)[v.file]);
      s.free();
      coder.free();
    }
  });

  it('rebuilds every pattern of up to 2 lost shards for 4+2 and 6+2', () => {
    const rand = prng(5);
    for (const [k, m] of [
      [4, 2],
      [6, 2],
    ]) {
      const coder = createCoder(k, m);
      const shards = Array.from({ length: k + m }, (_, i) => (i < k ? randomBytes(rand, 4099) : new Uint8Array(4099)));
      coder.encode(shards);
      for (const lost of erasurePatterns(k + m, m)) {
        const rebuilt = coder.reconstruct(shards.map((s, i) => (lost.includes(i) ? null : s)));
        for (const i of lost) expect(rebuilt[i]).toEqual(shards[i]);
      }
    }
  });

  it('computes the S3 checksums and XXH64', () => {
    const check = new TextEncoder().encode('123456789');
    const c = checksums();
    expect(c.crc32(check)).toBe(0xcbf43926);
    expect(c.crc32c(check)).toBe(0xe3069283);
    expect(c.crc64nvme(check)).toBe(0xae8b14860a799888n);
    expect(c.xxh64(new Uint8Array(0))).toBe(0xef46db3751d8e999n);
    expect(c.xxh64(new TextEncoder().encode('abc'))).toBe(0x44bc2cf5ad770999n);
    const d = randomBytes(prng(1), 100_000);
    expect(c.crc32(d)).toBe(checksums('scalar').crc32(d));
  });
});
