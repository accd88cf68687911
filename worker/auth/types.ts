/**
 * The contract of the authentication gate (verify.ts): what it is given and what it returns.
 * Kept apart so the per-scheme modules (verify-v4.ts, verify-v2.ts) share it without cycles.
 */

import type { ChecksumAlgorithm, HasherFactory } from '../model/checksums.ts';
import type { BodyStall } from './body-stream.ts';

/** How to verify; what is verified comes from the request view (model/request.ts). */
export interface VerifyOptions {
  /** Known access keys: accessKeyId -> secretAccessKey. */
  credentials: ReadonlyMap<string, string>;
  /** Checksum implementation for x-amz-checksum-* (worker/model/checksums.ts `createHasher`). */
  createHasher: HasherFactory;
  /**
   * Verify x-amz-checksum-* (header or trailer) over the body here (default true). Set false when
   * the consumer hashes the body anyway (to store the checksum) and compares against
   * `checksum.declared` itself, so the bytes are not hashed twice. Values are format-checked
   * either way, and the SHA-256 and chunk signatures are always verified here.
   */
  verifyChecksum?: boolean;
  /** The server's clock (tests pass the captured time). Default: new Date(). */
  now?: Date;
  /** When set, the credential scope must name this region; when unset, any region is accepted. */
  region?: string;
  /** Let requests with no authentication through (accessKeyId null). Default false: AccessDenied. */
  allowAnonymous?: boolean;
  /** Allowed difference between the request time and `now` for header auth. Default 15 minutes. */
  maxSkewMs?: number;
  /** A body that sends nothing for this long fails with RequestTimeout (body-stream.ts). Default 20 s. */
  clientIdleMs?: number;
  /** The shorter limit of a stalled body whose request holds what others wait for (body-stream.ts). */
  stall?: BodyStall;
}

export type AuthType = 'sigv4-header' | 'sigv4-query' | 'sigv2-query' | 'sigv2-header' | 'anonymous';

/** The client's checksum of the body (x-amz-checksum-* header or trailer). */
export interface RequestChecksum {
  readonly algorithm: ChecksumAlgorithm;
  readonly location: 'header' | 'trailer';
  /**
   * base64 of the big-endian checksum. From a header: the client's value, at once. From a
   * trailer: null until the body stream has been read to its end without error; then the
   * verified value. Either way the body stream errors (BadDigest) if the bytes do not match.
   */
  readonly expectedBase64: string | null;
  /**
   * Settles once the body stream has ended: with the declared value (already verified when
   * `verified`), or null if the body failed. Never rejects. Stays pending if the consumer cancels
   * the body before its end.
   */
  readonly declared: Promise<string | null>;
  /** Whether the gate verified the value over the body (VerifyOptions.verifyChecksum). */
  readonly verified: boolean;
}

export interface VerifiedRequest {
  /** Who signed the request; null for an anonymous request let through by `allowAnonymous`. */
  accessKeyId: string | null;
  authType: AuthType;
  /**
   * The payload, decoded (aws-chunked framing removed) and verified as it streams: it ERRORS at
   * its end (or at the bad chunk) with an S3Error if a chunk signature, the SHA-256, the checksum,
   * the length or the framing is wrong. Null when the request has no body.
   */
  body: ReadableStream<Uint8Array> | null;
  /** Payload length: x-amz-decoded-content-length for aws-chunked, else Content-Length; null if unknown. */
  decodedContentLength: number | null;
  /** The client's checksum, when it sent one (verified by the body stream). */
  checksum: RequestChecksum | null;
  /**
   * Content-MD5 (base64, format-checked here). Not verified here: the storage layer computes
   * the MD5 for the ETag anyway and must compare it (BadDigest), so the bytes are hashed once.
   */
  contentMd5: string | null;
  /** Content-Encoding with the `aws-chunked` token removed (what to store), null if none is left. */
  contentEncoding: string | null;
}
