// The blob-store contract every shard backend implements (R2 binding, any S3 endpoint, memory,
// and the fault-injecting wrapper). Blobs only: no metadata, no conditional writes, no multipart.
// The EC layer above owns manifests and checksums; a backend only moves bytes and reports
// failures as BackendError with a kind, so that one place (the S3 layer) maps them to S3 errors.
// The behaviour below is pinned by test/backends/contract.ts, run against every adapter.
// Known gaps: no create-only put (If-None-Match) yet, so 'PreconditionFailed' only appears when a
// provider itself answers 412; the R2 binding cannot be aborted, so `signal` is best effort there.

/** A byte range of a blob: `length` bytes starting at `offset` (both integers >= 0). */
export interface ByteRange {
  offset: number;
  length: number;
}

/**
 * A put body produced chunk by chunk into buffers the producer reuses (so a long upload allocates
 * nothing per chunk). `read()` gives the next chunk, or null at the end; the chunk is the
 * backend's until it calls `read()` again or the put settles, after which the producer may
 * overwrite it: a backend copies what it keeps. A backend that stops reading early (its upload
 * failed) calls `cancel()` once.
 */
export interface ChunkSource {
  read(): Promise<Uint8Array | null>;
  cancel(reason: unknown): void;
}

/** What put() accepts: bytes, a stream, or a ChunkSource. */
export type PutBody = ReadableStream<Uint8Array> | Uint8Array | ChunkSource;

export interface PutOptions {
  /** Aborts the write; the call then rejects with `signal.reason` (not a BackendError). */
  signal?: AbortSignal;
}

/**
 * A retention the backend itself enforces on a blob (S3 Object Lock, COMPLIANCE mode): until
 * `retainUntil` nobody, the gateway's own credentials included, deletes or overwrites it.
 */
export interface BlobRetention {
  retainUntil: Date;
}

export interface GetOptions {
  /** Aborts the read before or while the body streams; rejects / errors with `signal.reason`. */
  signal?: AbortSignal;
}

export interface GetResult {
  /** Exactly `range.length` bytes (or `size` without a range), unless the stream errors with a
   *  BackendError (Unavailable/Timeout) part-way. The caller must read it to the end or cancel it:
   *  an S3 backend holds a connection open until then. Chunks belong to the caller. */
  body: ReadableStream<Uint8Array>;
  /** Total size of the stored blob in bytes, not the length of the range. */
  size: number;
}

export interface BlobInfo {
  /** Size of the stored blob in bytes. */
  size: number;
  /** When the backend stored this version (used by the orphan collector's grace delay). */
  lastModified: Date;
}

export interface ListEntry extends BlobInfo {
  key: string;
}

export interface ListPage {
  entries: ListEntry[];
  /** Opaque; pass it back to get the next page. Undefined when there are no more pages. */
  cursor?: string;
}

export interface ListOptions {
  /** Most entries per page, 1..1000 (default 1000). A page may hold fewer even if more remain. */
  limit?: number;
}

/**
 * A blob store holding shards. Keys are non-empty UTF-8 strings of at most 1024 bytes without
 * "." or ".." path segments (an S3 URL cannot address those); shard keys are built by the EC
 * layer and always fit. Every method rejects only with BackendError for backend failures; a
 * caller bug (bad range, bad length argument) is a TypeError/RangeError.
 */
export interface Backend {
  /** Stable id, recorded in manifests as a shard's placement. */
  readonly id: string;
  /** Failure-domain label (provider/region/account); placement spreads shards across domains. */
  readonly domain: string;

  /**
   * Stores `body` under `key`, replacing any blob there. `length` is the exact byte count of the
   * body (R2 needs a known-length body, S3 a Content-Length). A body that yields more or fewer
   * bytes rejects with kind 'Corrupt' and leaves no new blob visible (plain s3rver breaks this one:
   * it truncates the old object as the PUT starts; the tests' s3rver, test/backends/s3rver-child.cjs,
   * commits only a whole body, as S3, R2 and MinIO do). Resolves once durable.
   * A Uint8Array body is not retained or modified after the promise settles; a ChunkSource's
   * chunks are read one at a time (see ChunkSource).
   */
  put(key: string, body: PutBody, length: number, opts?: PutOptions): Promise<void>;

  /**
   * Reads a blob, or the `range` of it. A range must lie within the blob; a zero-length range
   * (even at offset == size) is valid and yields an empty body. Missing key: 'NotFound'. Range
   * past the end of the stored blob (a short shard): 'Corrupt'.
   */
  get(key: string, range?: ByteRange, opts?: GetOptions): Promise<GetResult>;

  /** Size and time of a blob without reading it. Missing key: 'NotFound'. */
  head(key: string): Promise<BlobInfo>;

  /** Removes a blob. Idempotent: deleting a missing key resolves. */
  delete(key: string): Promise<void>;

  /**
   * Present only on a backend configured to enforce retention (an S3 backend with
   * `"objectLock": true` over a bucket with Object Lock enabled): sets or extends the blob's
   * COMPLIANCE retention. A retention shorter than the blob's is refused by the backend.
   */
  retain?(key: string, retention: BlobRetention): Promise<void>;

  /**
   * One page of the blobs whose key starts with `prefix`, in ascending UTF-8 byte order of key;
   * following `cursor` until it is undefined visits each such key exactly once (if nothing is
   * written meanwhile).
   */
  list(prefix: string, cursor?: string, opts?: ListOptions): Promise<ListPage>;
}

export type BackendErrorKind =
  | 'NotFound' // the key does not exist
  | 'Unavailable' // backend down, refused, reset, 5xx after retries, or unknown failure
  | 'Timeout' // no answer (or no body progress) within the backend's time budget
  | 'Throttled' // the backend asked us to slow down (429, 503 SlowDown) after retries
  | 'Corrupt' // bytes are not what they should be: short blob, wrong length written
  | 'PreconditionFailed'; // the backend refused a conditional request (412)

/**
 * The only error a backend throws for backend failures. The engine and upkeep read its kind
 * (NotFound: missing; `transient`: unreachable, try elsewhere); worker/app/error-map.ts turns one
 * that reaches a client into 503 ServiceUnavailable (SlowDown for Throttled).
 */
export class BackendError extends Error {
  override readonly name = 'BackendError';
  constructor(
    readonly backendId: string,
    readonly kind: BackendErrorKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${backendId}: ${kind}: ${message}`, options);
  }

  /** True for failures worth trying elsewhere or later: Unavailable, Timeout, Throttled (not NotFound, Corrupt, PreconditionFailed). */
  get transient(): boolean {
    return this.kind === 'Unavailable' || this.kind === 'Timeout' || this.kind === 'Throttled';
  }
}

export function isBackendError(err: unknown, kind?: BackendErrorKind): err is BackendError {
  return err instanceof BackendError && (kind === undefined || err.kind === kind);
}
