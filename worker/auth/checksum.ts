/**
 * The flexible checksums a client may send with a body (`x-amz-checksum-<alg>`, as a header or
 * as a trailer of an aws-chunked body): names, sizes, validation of the declared value.
 * Spec: S3 "Checking object integrity" (values are base64 of the big-endian digest).
 * Hashing itself is injected (`HasherFactory`): the real, fast implementation lives in
 * worker/s3/checksums.ts, tests bring a plain one; the gate never picks an implementation.
 */

import { S3Error } from '../model/errors.ts';
import { bytesEqual, fromBase64 } from './bytes.ts';

export type ChecksumAlgorithm = 'CRC32' | 'CRC32C' | 'CRC64NVME' | 'SHA1' | 'SHA256';

export interface Hasher {
  update(chunk: Uint8Array): void;
  /** base64 of the big-endian digest (what x-amz-checksum-* carries). Called once, at the end. */
  digestBase64(): string;
}

export type HasherFactory = (algorithm: ChecksumAlgorithm) => Hasher;

/** Digest sizes in bytes: a declared value of another size is malformed. */
export const CHECKSUM_BYTES: Readonly<Record<ChecksumAlgorithm, number>> = {
  CRC32: 4,
  CRC32C: 4,
  CRC64NVME: 8,
  SHA1: 20,
  SHA256: 32,
};

const ALGORITHM_BY_HEADER: ReadonlyMap<string, ChecksumAlgorithm> = new Map(
  (Object.keys(CHECKSUM_BYTES) as ChecksumAlgorithm[]).map((alg) => [checksumHeaderName(alg), alg]),
);

/** `CRC32` -> `x-amz-checksum-crc32`. */
export function checksumHeaderName(algorithm: ChecksumAlgorithm): string {
  return 'x-amz-checksum-' + algorithm.toLowerCase();
}

/** `x-amz-checksum-crc32` (any case) -> `CRC32`; undefined for anything else. */
export function checksumAlgorithmOf(headerName: string): ChecksumAlgorithm | undefined {
  return ALGORITHM_BY_HEADER.get(headerName.toLowerCase());
}

/** Throws InvalidRequest unless `value` is base64 of exactly the algorithm's digest size. */
export function assertChecksumValue(algorithm: ChecksumAlgorithm, value: string, where: 'header' | 'trailer'): void {
  const bytes = fromBase64(value);
  if (!bytes || bytes.length !== CHECKSUM_BYTES[algorithm]) {
    const name = checksumHeaderName(algorithm);
    if (where === 'trailer') throw new S3Error('MalformedTrailerError', undefined, { TrailerHeader: name });
    throw new S3Error('InvalidRequest', `Value for ${name} header is invalid.`);
  }
}

/** Compares two base64 digests by value (so optional padding does not matter). */
export function checksumEquals(expectedBase64: string, actualBase64: string): boolean {
  const a = fromBase64(expectedBase64);
  const b = fromBase64(actualBase64);
  return a !== null && b !== null && bytesEqual(a, b);
}

/** The error for a body whose checksum is not the declared one. */
export function badDigest(algorithm: ChecksumAlgorithm): S3Error {
  return new S3Error('BadDigest', `The ${algorithm} you specified did not match the calculated checksum.`);
}

/** A checksum declared for a body: the declared value once known, and the hasher that checks it. */
export interface ChecksumCheck {
  algorithm: ChecksumAlgorithm;
  /** Null when verification is left to the consumer (VerifyOptions.verifyChecksum false). */
  hasher: Hasher | null;
  /** From the header: known at once. From a trailer: null until the decoder has read it. */
  expectedBase64: string | null;
  /** Called once the body has ended: with the declared (and, with a hasher, verified) value, or null on failure. */
  settle?: (value: string | null) => void;
}

/** Ends a check at the end of the body: BadDigest unless the declared value is there and matches. */
export function finishChecksum(check: ChecksumCheck): void {
  const expected = check.expectedBase64;
  if (expected === null || (check.hasher && !checksumEquals(expected, check.hasher.digestBase64()))) {
    throw badDigest(check.algorithm);
  }
}
