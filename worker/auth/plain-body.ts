/**
 * Verification of a body that is not aws-chunked: its length against Content-Length, its
 * SHA-256 against a hex `x-amz-content-sha256`, its checksum against an `x-amz-checksum-*`
 * header. Bytes pass through untouched; the stream errors at its end (S3Error) when a check
 * fails, so a consumer that stores the stream aborts and keeps nothing.
 *
 * SHA-256 is streamed with node:crypto (Web Crypto has no incremental digest; workerd provides
 * node:crypto under the nodejs_compat flag). Each byte is hashed once per declared digest.
 */

import { createHash, type Hash } from 'node:crypto';
import { S3Error } from '../model/errors.ts';
import { timingSafeEqual } from '../model/bytes.ts';
import { finishChecksum, type ChecksumCheck } from './checksum.ts';

export interface PlainBodyChecks {
  /** Content-Length, when the client sent one: the body must have exactly this many bytes. */
  contentLength: number | null;
  /** Lower-case hex SHA-256 the client signed (x-amz-content-sha256), or null (UNSIGNED-PAYLOAD). */
  sha256Hex: string | null;
  /** A checksum header to verify, or null. */
  checksum: ChecksumCheck | null;
}

export function sha256Mismatch(): S3Error {
  return new S3Error('XAmzContentSHA256Mismatch');
}

class PlainBodyVerifier {
  private length = 0;
  private readonly sha256: Hash | null;

  constructor(private readonly checks: PlainBodyChecks) {
    this.sha256 = checks.sha256Hex !== null ? createHash('sha256') : null;
  }

  update(piece: Uint8Array): void {
    this.length += piece.length;
    if (this.checks.contentLength !== null && this.length > this.checks.contentLength) {
      throw new S3Error('InvalidRequest', 'The body is longer than Content-Length.');
    }
    this.sha256?.update(piece);
    this.checks.checksum?.hasher?.update(piece);
  }

  finish(): void {
    if (this.checks.contentLength !== null && this.length !== this.checks.contentLength) {
      throw new S3Error('IncompleteBody');
    }
    if (this.sha256 && !timingSafeEqual(this.sha256.digest('hex'), this.checks.sha256Hex!)) throw sha256Mismatch();
    if (this.checks.checksum) finishChecksum(this.checks.checksum);
  }
}

/**
 * The verifier of a plain body as a BodyStep (body-stream.ts) and its end: each piece is checked
 * and passed on as it is; the end throws unless every declared check holds.
 */
export function plainBodySteps(checks: PlainBodyChecks): { step: (piece: Uint8Array) => Uint8Array[]; finish: () => void } {
  const verifier = new PlainBodyVerifier(checks);
  const settleOnFailure = <T>(fn: () => T): T => {
    try {
      return fn();
    } catch (err) {
      checks.checksum?.settle?.(null);
      throw err;
    }
  };
  return {
    step: (piece) => settleOnFailure(() => (verifier.update(piece), [piece])),
    finish: () => {
      settleOnFailure(() => verifier.finish());
      checks.checksum?.settle?.(checks.checksum.expectedBase64);
    },
  };
}

/** Runs the checks over an absent body (as zero bytes), throwing at once on failure. */
export function verifyEmptyBody(checks: PlainBodyChecks): void {
  new PlainBodyVerifier(checks).finish();
  checks.checksum?.settle?.(checks.checksum.expectedBase64);
}
