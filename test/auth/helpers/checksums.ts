/**
 * Test-only checksum implementations (HasherFactory) for the auth gate's tests: plain
 * table-driven CRCs, slow and obviously right, and node:crypto for SHA. The real, fast ones
 * (wasm) live in worker/model/checksums.ts and are compared against these elsewhere.
 * All CRCs here are reflected, with init and xorout all ones; values are big-endian base64.
 */

import { createHash } from 'node:crypto';
import type { ChecksumAlgorithm, Hasher, HasherFactory } from '../../../worker/model/checksums.ts';

function crc32Table(reflectedPoly: number): Uint32Array {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ reflectedPoly : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
}

const CRC32_TABLE = crc32Table(0xedb88320);
const CRC32C_TABLE = crc32Table(0x82f63b78);

// CRC64NVME: polynomial 0xAD93D23594C93659, reflected 0x9A6C9329AC4BC9B5, kept as two 32-bit halves.
const CRC64_LO = new Uint32Array(256);
const CRC64_HI = new Uint32Array(256);
{
  const polyHi = 0x9a6c9329;
  const polyLo = 0xac4bc9b5;
  for (let n = 0; n < 256; n++) {
    let lo = n;
    let hi = 0;
    for (let k = 0; k < 8; k++) {
      const carry = lo & 1;
      lo = ((lo >>> 1) | ((hi & 1) << 31)) >>> 0;
      hi = hi >>> 1;
      if (carry) {
        lo = (lo ^ polyLo) >>> 0;
        hi = (hi ^ polyHi) >>> 0;
      }
    }
    CRC64_LO[n] = lo;
    CRC64_HI[n] = hi;
  }
}

function bigEndianBase64(words: number[]): string {
  const bytes = new Uint8Array(words.length * 4);
  const view = new DataView(bytes.buffer);
  words.forEach((w, i) => view.setUint32(i * 4, w >>> 0));
  return btoa(String.fromCharCode(...bytes));
}

class Crc32Hasher implements Hasher {
  private crc = 0xffffffff;
  constructor(private readonly table: Uint32Array) {}
  update(chunk: Uint8Array): void {
    let crc = this.crc;
    const table = this.table;
    for (let i = 0; i < chunk.length; i++) crc = table[(crc ^ chunk[i]) & 0xff] ^ (crc >>> 8);
    this.crc = crc;
  }
  value(): number {
    return (this.crc ^ 0xffffffff) >>> 0;
  }
  digestBase64(): string {
    return bigEndianBase64([this.value()]);
  }
}

class Crc64NvmeHasher implements Hasher {
  private lo = 0xffffffff;
  private hi = 0xffffffff;
  update(chunk: Uint8Array): void {
    let { lo, hi } = this;
    for (let i = 0; i < chunk.length; i++) {
      const idx = (lo ^ chunk[i]) & 0xff;
      lo = (((lo >>> 8) | (hi << 24)) ^ CRC64_LO[idx]) >>> 0;
      hi = ((hi >>> 8) ^ CRC64_HI[idx]) >>> 0;
    }
    this.lo = lo;
    this.hi = hi;
  }
  value(): bigint {
    return (BigInt((this.hi ^ 0xffffffff) >>> 0) << 32n) | BigInt((this.lo ^ 0xffffffff) >>> 0);
  }
  digestBase64(): string {
    return bigEndianBase64([(this.hi ^ 0xffffffff) >>> 0, (this.lo ^ 0xffffffff) >>> 0]);
  }
}

class NodeHashHasher implements Hasher {
  private readonly hash;
  constructor(alg: 'sha1' | 'sha256') {
    this.hash = createHash(alg);
  }
  update(chunk: Uint8Array): void {
    this.hash.update(chunk);
  }
  digestBase64(): string {
    return this.hash.digest('base64');
  }
}

export function crc32(): Crc32Hasher {
  return new Crc32Hasher(CRC32_TABLE);
}
export function crc32c(): Crc32Hasher {
  return new Crc32Hasher(CRC32C_TABLE);
}
export function crc64nvme(): Crc64NvmeHasher {
  return new Crc64NvmeHasher();
}

export const testCreateHasher: HasherFactory = (alg: ChecksumAlgorithm): Hasher => {
  switch (alg) {
    case 'CRC32':
      return crc32();
    case 'CRC32C':
      return crc32c();
    case 'CRC64NVME':
      return crc64nvme();
    case 'SHA1':
      return new NodeHashHasher('sha1');
    case 'SHA256':
      return new NodeHashHasher('sha256');
  }
};

/** One-shot checksum of `data`, base64 big-endian. */
export function checksumOf(alg: ChecksumAlgorithm, data: Uint8Array | string): string {
  const h = testCreateHasher(alg);
  h.update(typeof data === 'string' ? new TextEncoder().encode(data) : data);
  return h.digestBase64();
}
