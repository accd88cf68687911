/**
 * Checksums of the coder module: check values, chaining, combine, and agreement with
 * independent implementations (bitwise CRCs written here, node:zlib's crc32, xxhash-wasm) over
 * many lengths, for every kernel build.
 */
import { crc32 as zlibCrc32 } from 'node:zlib';
import xxhash from 'xxhash-wasm';
import { describe, expect, it } from 'vitest';
import { KERNELS, checksums } from '../../coder-wasm/index.ts';
import { prng, randomBytes } from '../support/random.ts';

const CHECK = new TextEncoder().encode('123456789');

function bitwiseCrc(poly: bigint, width: number, data: Uint8Array): bigint {
  const mask = (1n << BigInt(width)) - 1n;
  let crc = mask;
  for (const b of data) {
    crc ^= BigInt(b);
    for (let i = 0; i < 8; i++) crc = crc & 1n ? (crc >> 1n) ^ poly : crc >> 1n;
  }
  return crc ^ mask;
}
const refCrc32 = (d: Uint8Array) => Number(bitwiseCrc(0xedb88320n, 32, d));
const refCrc32c = (d: Uint8Array) => Number(bitwiseCrc(0x82f63b78n, 32, d));
const refCrc64 = (d: Uint8Array) => bitwiseCrc(0x9a6c9329ac4bc9b5n, 64, d);

describe.each(KERNELS.map((k) => [k]))('checksums in the %s build', (kernel) => {
  const c = checksums(kernel);

  it('give the published check values for "123456789"', () => {
    expect(c.crc32(CHECK)).toBe(0xcbf43926);
    expect(c.crc32c(CHECK)).toBe(0xe3069283);
    expect(c.crc64nvme(CHECK)).toBe(0xae8b14860a799888n);
    expect(c.crc32Impl).toBe('wasm');
  });

  it('agree with bitwise references on lengths 0..300 and large staged inputs', () => {
    const rand = prng(11);
    const data = randomBytes(rand, 300);
    for (let len = 0; len <= 300; len += len < 40 ? 1 : 37) {
      const d = data.subarray(0, len);
      expect(c.crc32(d)).toBe(refCrc32(d));
      expect(c.crc32c(d)).toBe(refCrc32c(d));
      expect(c.crc64nvme(d)).toBe(refCrc64(d));
    }
    const big = randomBytes(rand, 700_001); // larger than the 256 KiB staging buffer
    expect(c.crc32(big)).toBe(zlibCrc32(big) >>> 0);
  });

  it('chain and combine like one pass over the concatenation', () => {
    const rand = prng(12);
    const a = randomBytes(rand, 5000),
      b = randomBytes(rand, 3333);
    const ab = new Uint8Array([...a, ...b]);
    expect(c.crc32(b, c.crc32(a))).toBe(c.crc32(ab));
    expect(c.crc32c(b, c.crc32c(a))).toBe(c.crc32c(ab));
    expect(c.crc64nvme(b, c.crc64nvme(a))).toBe(c.crc64nvme(ab));
    expect(c.crc32Combine(c.crc32(a), c.crc32(b), b.length)).toBe(c.crc32(ab));
    expect(c.crc32cCombine(c.crc32c(a), c.crc32c(b), b.length)).toBe(c.crc32c(ab));
    expect(c.crc64nvmeCombine(c.crc64nvme(a), c.crc64nvme(b), b.length)).toBe(c.crc64nvme(ab));
    // Combining with an empty part is the identity; a 5 GiB part (multipart sizes) still works.
    expect(c.crc32cCombine(c.crc32c(a), c.crc32c(new Uint8Array(0)), 0)).toBe(c.crc32c(a));
    const zeros = new Uint8Array(1 << 20);
    let whole = c.crc64nvme(a);
    for (let i = 0; i < 3; i++) whole = c.crc64nvme(zeros, whole);
    expect(c.crc64nvmeCombine(c.crc64nvme(a), c.crc64nvme(new Uint8Array(3 << 20)), 3 << 20)).toBe(whole);
  });

  it('XXH64 matches xxhash-wasm on every length 0..200 and a large input', async () => {
    const { h64Raw } = await xxhash();
    const rand = prng(13);
    const data = randomBytes(rand, 200);
    for (let len = 0; len <= 200; len++) {
      const d = data.subarray(0, len);
      expect(c.xxh64(d), `len ${len}`).toBe(h64Raw(d));
      expect(c.xxh64(d, 0x1234n)).toBe(h64Raw(d, 0x1234n));
    }
    const big = randomBytes(rand, 1 << 20);
    expect(c.xxh64(big)).toBe(h64Raw(big));
  });
});

describe('default checksums', () => {
  it('use the native crc32 of node:zlib where present, with the same answers', () => {
    const c = checksums();
    expect(c.crc32Impl).toBe('native');
    const rand = prng(14);
    const d = randomBytes(rand, 10_000);
    expect(c.crc32(d)).toBe(checksums('scalar').crc32(d));
    expect(c.crc32(d.subarray(5000), c.crc32(d.subarray(0, 5000)))).toBe(c.crc32(d));
  });
});
