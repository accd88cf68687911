// A Backend wrapper that reports every call it passes on: which backend, which operation, how
// long until the backend answered, how many bytes went out or were asked for, and how it ended.
// The gateway wraps each configured backend in one (worker/gateway.ts) and feeds the reports to
// its per-isolate meter (worker/ops/meter.ts): health, latency, request counts and egress come
// from real traffic without touching the engine.
// What is measured: put, head, delete and list until the promise settles; get until the backend
// answered with a body (time to first byte, as engine/backend-latency.ts measures reads). Bytes:
// a put's length; a get's range length (or the blob's size without a range), that is, what was
// asked of the backend, whether or not the caller read it all (nothing for a get that failed).
// Whose failure: a call the caller cancelled is 'Aborted', never the backend's error, whatever
// the adapter rethrows then: the caller's signal was aborted (the gateway stopped the other
// uploads of a write that missed its quorum, or the client went away), or a put's ChunkSource
// body failed on the caller's side (its sink was stopped). Without this, every refused write
// marked the healthy backends it cancelled as degraded, with the quorum's message as their error.
// Known gaps: a get body that breaks after the answer is not reported here (the reader that meets
// it reports the shard for repair); a put's bytes count even when the upload failed part-way; a
// ReadableStream put body that errors on the caller's side counts as the backend's failure unless
// the caller also aborts the signal (the engine's uploads use ChunkSource bodies).

import type { BackendOp } from './faulty.ts';
import { isChunkSource } from './streams.ts';
import {
  isBackendError,
  type Backend,
  type BackendErrorKind,
  type BlobInfo,
  type ByteRange,
  type GetOptions,
  type GetResult,
  type ListOptions,
  type ListPage,
  type PutBody,
  type PutOptions,
} from './types.ts';

/** One finished backend call. `outcome` 'ok' includes answers such as NotFound (the backend answered). */
export interface BackendCallReport {
  backend: string;
  op: BackendOp;
  /** Milliseconds from the call to the backend's answer. */
  ms: number;
  /** put: bytes sent; get: bytes asked for; others 0. */
  bytes: number;
  /** The key called (a list's prefix): whose traffic it was. */
  key: string;
  outcome: 'ok' | BackendErrorKind | 'Aborted';
  /** The error message of a failed call. */
  message?: string;
}

/**
 * What the gateway asked of one backend for one bucket (bucket null: calls over all buckets, as
 * listings): the ops record's counts as the cost report prices them.
 */
export interface TrafficCounts {
  backendId: string;
  bucket: string | null;
  puts: number;
  gets: number;
  heads: number;
  lists: number;
  deletes: number;
  /** Bytes sent to the backend (PUT bodies). */
  bytesIn: number;
  /** Bytes read from the backend (GET bodies asked for): what egress is billed on. */
  bytesOut: number;
}

/**
 * Upkeep work whose backend calls are also counted apart (worker/ops/meter.ts `job`): the fleet
 * mover (drains and rebalances), the re-stripe and the lifecycle's transitions (their rewrites
 * under another storage class). Here, beside TrafficCounts, because both the
 * ops counters and the cost report (worker/upkeep) name them.
 */
export type UpkeepJob = 'move' | 'restripe' | 'transition';

/**
 * What one upkeep job asked of one backend, over all buckets: a part of that backend's
 * TrafficCounts (and of its buckets' lines), counted the same way.
 */
export type JobTraffic = Omit<TrafficCounts, 'bucket'> & { job: UpkeepJob };

export type BackendCallSink = (report: BackendCallReport) => void;

/** Outcomes that are answers, not failures: the backend is reachable and did what it should. */
const ANSWERS: ReadonlySet<string> = new Set(['NotFound', 'PreconditionFailed']);

export class MeteredBackend implements Backend {
  readonly id: string;
  readonly domain: string;

  constructor(
    readonly inner: Backend,
    private readonly sink: BackendCallSink,
    private readonly now: () => number = () => Date.now(),
  ) {
    this.id = inner.id;
    this.domain = inner.domain;
  }

  private async measure<T>(
    op: BackendOp,
    key: string,
    bytes: (r: T | undefined) => number,
    call: () => Promise<T>,
    cancelled: () => boolean = () => false,
  ): Promise<T> {
    const started = this.now();
    try {
      const r = await call();
      this.report(op, key, started, bytes(r), 'ok');
      return r;
    } catch (err) {
      const kind = cancelled() ? 'Aborted' : isBackendError(err) ? err.kind : (err as Error)?.name === 'AbortError' ? 'Aborted' : 'Unavailable';
      const answered = kind === 'Aborted' || ANSWERS.has(kind);
      this.report(op, key, started, bytes(undefined), ANSWERS.has(kind) ? 'ok' : kind, answered ? undefined : String((err as Error)?.message ?? err));
      throw err;
    }
  }

  private report(op: BackendOp, key: string, started: number, bytes: number, outcome: BackendCallReport['outcome'], message?: string): void {
    try {
      this.sink({ backend: this.id, op, key, ms: Math.max(0, this.now() - started), bytes, outcome, ...(message ? { message } : {}) });
    } catch {
      // Metering must never fail a storage call.
    }
  }

  put(key: string, body: PutBody, length: number, opts?: PutOptions): Promise<void> {
    let sourceBroke = false;
    const watched: PutBody = isChunkSource(body)
      ? {
          read: () =>
            body.read().catch((err: unknown) => {
              sourceBroke = true;
              throw err;
            }),
          cancel: (reason: unknown) => body.cancel(reason),
        }
      : body;
    return this.measure(
      'put',
      key,
      () => length,
      () => this.inner.put(key, watched, length, opts),
      () => sourceBroke || !!opts?.signal?.aborted,
    );
  }

  get(key: string, range?: ByteRange, opts?: GetOptions): Promise<GetResult> {
    return this.measure(
      'get',
      key,
      (r) => (r ? (range ? range.length : r.size) : 0),
      () => this.inner.get(key, range, opts),
      () => !!opts?.signal?.aborted,
    );
  }

  head(key: string): Promise<BlobInfo> {
    return this.measure(
      'head',
      key,
      () => 0,
      () => this.inner.head(key),
    );
  }

  /** Forwarded when the inner backend enforces retention; counted as the PUT request it is. */
  get retain(): Backend['retain'] {
    const inner = this.inner;
    return inner.retain
      ? (key, retention) =>
          this.measure(
            'put',
            key,
            () => 0,
            () => inner.retain!(key, retention),
          )
      : undefined;
  }

  delete(key: string): Promise<void> {
    return this.measure(
      'delete',
      key,
      () => 0,
      () => this.inner.delete(key),
    );
  }

  list(prefix: string, cursor?: string, opts?: ListOptions): Promise<ListPage> {
    return this.measure(
      'list',
      prefix,
      () => 0,
      () => this.inner.list(prefix, cursor, opts),
    );
  }
}
