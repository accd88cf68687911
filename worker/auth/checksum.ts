/**
 * A checksum the client declared for a request body (`x-amz-checksum-<alg>` as a header or an
 * aws-chunked trailer), as the gate's body verifiers carry it. The vocabulary (algorithms,
 * sizes, names, value checks, hashers) is the model's (worker/model/checksums.ts); hashing is
 * injected (VerifyOptions.createHasher), so the gate never picks an implementation.
 */
import { badDigest, checksumEquals, type ChecksumAlgorithm, type Hasher } from '../model/checksums.ts';

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
