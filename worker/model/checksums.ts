/**
 * S3 flexible checksums as streaming hashers: CRC32, CRC32C and CRC64NVME from the coder module
 * (CRC32 natively where the runtime has it), SHA1 and SHA256 from node:crypto (workerd provides
 * it under nodejs_compat). Values are what S3 puts in `x-amz-checksum-*`: base64 of the
 * big-endian digest. `combineCrc` joins two CRCs for multipart FULL_OBJECT checksums.
 */
import { createHash } from 'node:crypto';
import { checksums } from '../../coder-wasm/index.ts';
import { toBase64 } from './bytes.ts';

export const CHECKSUM_ALGORITHMS = ['CRC32', 'CRC32C', 'CRC64NVME', 'SHA1', 'SHA256'] as const;
export type ChecksumAlgorithm = (typeof CHECKSUM_ALGORITHMS)[number];

export interface Hasher {
  update(chunk: Uint8Array): void;
  digestBase64(): string;
}

export type HasherFactory = (alg: ChecksumAlgorithm) => Hasher;



function u32be(v: number): Uint8Array {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, v >>> 0);
  return out;
}

function u64be(v: bigint): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, BigInt.asUintN(64, v));
  return out;
}

function crc32Hasher(update: (d: Uint8Array, prev: number) => number): Hasher {
  let crc = 0;
  return {
    update: (chunk) => void (crc = update(chunk, crc)),
    digestBase64: () => toBase64(u32be(crc)),
  };
}

export const createHasher: HasherFactory = (alg) => {
  const c = checksums();
  switch (alg) {
    case 'CRC32':
      return crc32Hasher(c.crc32);
    case 'CRC32C':
      return crc32Hasher(c.crc32c);
    case 'CRC64NVME': {
      let crc = 0n;
      return {
        update: (chunk) => void (crc = c.crc64nvme(chunk, crc)),
        digestBase64: () => toBase64(u64be(crc)),
      };
    }
    case 'SHA1':
    case 'SHA256': {
      const h = createHash(alg === 'SHA1' ? 'sha1' : 'sha256');
      return {
        update: (chunk) => void h.update(chunk),
        digestBase64: () => h.digest('base64'),
      };
    }
  }
};

/** The CRC of A ++ B from the big-endian digests of A and B and B's length. */
export function combineCrc(alg: 'CRC32' | 'CRC32C' | 'CRC64NVME', crcA: Uint8Array, crcB: Uint8Array, lenB: number): Uint8Array {
  const c = checksums();
  const view = (b: Uint8Array) => new DataView(b.buffer, b.byteOffset, b.byteLength);
  if (alg === 'CRC64NVME') return u64be(c.crc64nvmeCombine(view(crcA).getBigUint64(0), view(crcB).getBigUint64(0), lenB));
  const combine = alg === 'CRC32' ? c.crc32Combine : c.crc32cCombine;
  return u32be(combine(view(crcA).getUint32(0), view(crcB).getUint32(0), lenB));
}
