/**
 * S3's checksum vocabulary, one copy for every layer: the flexible-checksum algorithms, their
 * digest sizes, header and XML names, value checks, Content-MD5, streaming hashers and the CRC
 * combine of multipart FULL_OBJECT checksums.
 * Spec: S3 "Checking object integrity": values are base64 of the big-endian digest, sent as
 * `x-amz-checksum-<alg>` (header or aws-chunked trailer); a wrong value is BadDigest, and so is
 * a malformed header value (not base64 of the digest size: it cannot be the body's digest
 * either; ceph's s3-tests expect BadDigest for `bad`); a malformed trailer value is
 * MalformedTrailerError, a malformed value in a request document InvalidRequest.
 * Hashers: CRC32, CRC32C and CRC64NVME come from the coder module (CRC32 natively where the
 * runtime has it), SHA1 and SHA256 from node:crypto (workerd provides it under nodejs_compat).
 */
import { createHash } from 'node:crypto';
import { checksums } from '../../coder-wasm/index.ts';
import { base64Equal, fromBase64, toBase64 } from './bytes.ts';
import { S3Error } from './errors.ts';

export const CHECKSUM_ALGORITHMS = ['CRC32', 'CRC32C', 'CRC64NVME', 'SHA1', 'SHA256'] as const;
export type ChecksumAlgorithm = (typeof CHECKSUM_ALGORITHMS)[number];
export type ChecksumType = 'COMPOSITE' | 'FULL_OBJECT';

/** Digest sizes in bytes: a declared value of another size is malformed. */
export const CHECKSUM_BYTES: Readonly<Record<ChecksumAlgorithm, number>> = { CRC32: 4, CRC32C: 4, CRC64NVME: 8, SHA1: 20, SHA256: 32 };

/** `CRC32` -> `x-amz-checksum-crc32`. */
export const checksumHeaderName = (alg: ChecksumAlgorithm) => `x-amz-checksum-${alg.toLowerCase()}`;
/** The element name in XML: ChecksumCRC32, ChecksumSHA256, ... */
export const checksumElement = (alg: ChecksumAlgorithm) => `Checksum${alg}`;

/** `x-amz-checksum-crc32` (any case) -> `CRC32`; undefined for anything else. */
export function checksumAlgorithmOf(headerName: string): ChecksumAlgorithm | undefined {
  const name = headerName.toLowerCase();
  return CHECKSUM_ALGORITHMS.find((a) => checksumHeaderName(a) === name);
}

/** An algorithm name as a client spells it (any case); InvalidRequest for anything else. */
export function parseChecksumAlgorithm(value: string): ChecksumAlgorithm {
  const alg = CHECKSUM_ALGORITHMS.find((a) => a === value.toUpperCase());
  if (!alg)
    throw new S3Error(
      'InvalidRequest',
      `Checksum algorithm provided is unsupported. Please try again with any of the valid types: [${CHECKSUM_ALGORITHMS.join(', ')}]`,
    );
  return alg;
}

/**
 * Throws unless `value` is base64 of exactly the algorithm's digest size: BadDigest for a header,
 * MalformedTrailerError for a trailer, InvalidRequest for a value in a request document
 * (CompleteMultipartUpload's part checksums). A composite value's "-N" suffix is accepted when
 * `allowParts`. Returns the value.
 */
export function assertChecksumValue(
  algorithm: ChecksumAlgorithm,
  value: string,
  where: 'header' | 'trailer' | 'document' = 'header',
  allowParts = false,
): string {
  const digest = allowParts ? value.replace(/-\d+$/, '') : value;
  if (fromBase64(digest)?.length !== CHECKSUM_BYTES[algorithm]) {
    const name = checksumHeaderName(algorithm);
    if (where === 'trailer') throw new S3Error('MalformedTrailerError', undefined, { TrailerHeader: name });
    if (where === 'document') throw new S3Error('InvalidRequest', `Value for ${checksumElement(algorithm)} is invalid.`);
    throw new S3Error('BadDigest', `Value for ${name} header is invalid: it is not the base64 of a ${algorithm} digest.`);
  }
  return value;
}

/** Compares two base64 digests by value (so optional padding does not matter). */
export const checksumEquals = base64Equal;

/** The error for a body whose checksum is not the declared one. */
export function badDigest(algorithm: ChecksumAlgorithm): S3Error {
  return new S3Error('BadDigest', `The ${algorithm} you specified did not match the calculated checksum.`);
}

/** Content-MD5, checked to be base64 of 16 bytes (InvalidDigest otherwise); null if absent. */
export function readContentMd5(headers: Headers): string | null {
  const value = headers.get('content-md5');
  if (value === null) return null;
  if (fromBase64(value.trim())?.length !== 16) throw new S3Error('InvalidDigest');
  return value.trim();
}

export interface Hasher {
  update(chunk: Uint8Array): void;
  /** base64 of the big-endian digest (what x-amz-checksum-* carries). Called once, at the end. */
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
