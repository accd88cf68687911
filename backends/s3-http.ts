// Signed HTTP exchanges with one S3-compatible endpoint: SigV4 via aws4fetch (service 's3',
// explicit region, UNSIGNED-PAYLOAD), our own retry budget and per-attempt timeout, and the
// mapping of HTTP outcomes to BackendError kinds. aws4fetch's own retry loop is switched off
// (retries: 0) because its default of 10 retries turns an outage into a long stall.
// Policy: only 5xx and throttling (429, SlowDown) are retried, with exponential backoff and
// jitter, and only for requests whose body can be sent again; network errors and timeouts fail
// at once (a down backend must be reported fast so the EC layer reads another shard).
// Known gaps: Retry-After is not honoured; the timeout bounds idle time (no upload progress, no
// headers, no download progress), never the whole transfer.

import { AwsClient } from 'aws4fetch';
import { parseS3Error } from './s3-xml.ts';
import { BackendError, type BackendErrorKind } from './types.ts';

export interface S3HttpOptions {
  backendId: string;
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  region: string;
  /** Per attempt, milliseconds; also the longest pause allowed between body chunks. */
  timeoutMs: number;
  /** Extra attempts after a 5xx/throttled answer, for replayable requests only. */
  retries: number;
  retryBaseMs: number;
  fetch: (request: Request) => Promise<Response>;
}

export interface S3Request {
  method: 'GET' | 'HEAD' | 'PUT' | 'DELETE';
  url: string;
  headers?: Record<string, string>;
  /** A stream body is never retried (it cannot be replayed). */
  body?: Uint8Array | ReadableStream<Uint8Array>;
  signal?: AbortSignal;
  /** Set by send() while an attempt runs: call it as upload bytes flow, so the timeout bounds
   *  "no progress" rather than the whole upload. */
  progress?: { touch?: () => void };
}

/** A response whose body the caller still streams: it must call touch() per chunk and done()
 *  at the end, and map body errors with mapError(). */
export interface S3Exchange {
  res: Response;
  touch(): void;
  done(): void;
  mapError(err: unknown): unknown;
}

export class S3Http {
  private readonly aws: AwsClient;

  constructor(private readonly o: S3HttpOptions) {
    this.aws = new AwsClient({
      accessKeyId: o.accessKeyId,
      secretAccessKey: o.secretAccessKey,
      sessionToken: o.sessionToken,
      service: 's3',
      region: o.region,
      retries: 0,
    });
  }

  /** Sends `req`, retrying per policy. Resolves with any status the caller handles itself
   *  (`accept`); otherwise rejects with a BackendError built from the status and error XML. */
  async send(req: S3Request, accept: (status: number) => boolean): Promise<S3Exchange> {
    const replayable = !(req.body instanceof ReadableStream);
    for (let attempt = 0; ; attempt++) {
      const ex = await this.attempt(req);
      if (accept(ex.res.status)) return ex;
      const text = req.method === 'HEAD' ? '' : await ex.res.text().catch(() => '');
      ex.done();
      const err = this.statusError(ex.res.status, text);
      const retryable = err.kind === 'Throttled' || ex.res.status >= 500;
      if (!retryable || !replayable || attempt >= this.o.retries) throw err;
      await sleep(this.o.retryBaseMs * 2 ** attempt * (0.5 + Math.random() / 2));
    }
  }

  private async attempt(req: S3Request): Promise<S3Exchange> {
    const ctl = new AbortController();
    let timedOut = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    // Progress is a timestamp, checked when the one timer fires (and the timer set again for the
    // rest of the window): touch() runs once a chunk, and clearing and setting a timer there was
    // 7% of the Worker's sampled time on a 64 MiB PUT (bench:profile --backends s3rver; the
    // sampler inflates small calls: bench:peer saw no difference beyond its spread).
    let lastProgress = 0;
    const check = () => {
      const quiet = Date.now() - lastProgress;
      if (quiet < this.o.timeoutMs) {
        timer = setTimeout(check, this.o.timeoutMs - quiet);
        return;
      }
      timedOut = true;
      ctl.abort();
    };
    const arm = () => {
      lastProgress = Date.now();
      timer ??= setTimeout(check, this.o.timeoutMs);
    };
    req.signal?.throwIfAborted();
    const onCallerAbort = () => ctl.abort(req.signal?.reason);
    req.signal?.addEventListener('abort', onCallerAbort, { once: true });
    const done = () => {
      clearTimeout(timer);
      req.signal?.removeEventListener('abort', onCallerAbort);
    };
    const mapError = (err: unknown): unknown => {
      if (req.signal?.aborted) return req.signal.reason;
      if (err instanceof BackendError) return err;
      if (timedOut) return this.error('Timeout', `no progress within ${this.o.timeoutMs} ms`, err);
      return this.error('Unavailable', `${req.method} failed: ${describe(err)}`, err);
    };
    arm();
    if (req.progress) req.progress.touch = arm;
    try {
      const init = { method: req.method, headers: req.headers, body: req.body, signal: ctl.signal, duplex: 'half' };
      const signed = await this.aws.sign(req.url, init as RequestInit);
      const res = await this.o.fetch(signed);
      return { res, touch: arm, done, mapError };
    } catch (err) {
      done();
      throw mapError(err);
    }
  }

  private statusError(status: number, body: string): BackendError {
    const { code, message } = parseS3Error(body);
    const detail = `HTTP ${status}${code ? ` ${code}` : ''}${message ? `: ${message}` : ''}`;
    return this.error(statusKind(status, code), detail);
  }

  error(kind: BackendErrorKind, message: string, cause?: unknown): BackendError {
    return new BackendError(this.o.backendId, kind, message, cause === undefined ? undefined : { cause });
  }
}

/** HTTP status + S3 error code -> kind. A 404 for a missing bucket is a configuration fault,
 *  not a missing shard, so it reads as Unavailable. 4xx auth/config errors are Unavailable too. */
export function statusKind(status: number, code: string): BackendErrorKind {
  if (status === 404) return code === 'NoSuchBucket' ? 'Unavailable' : 'NotFound';
  if (status === 412) return 'PreconditionFailed';
  if (status === 416) return 'Corrupt';
  if (status === 429 || status === 503 || code === 'SlowDown') return 'Throttled';
  if (status === 408 || code === 'RequestTimeout') return 'Timeout';
  return 'Unavailable';
}

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = (err as { cause?: unknown }).cause;
  return cause instanceof Error ? `${err.message} (${(cause as { code?: string }).code ?? cause.message})` : err.message;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
