/**
 * The deadline of the S3 request being served, carried across awaits (AsyncLocalStorage, as
 * request-notes.ts carries its notes) so that every backend call made for it waits no longer than
 * the request can (issue 37): a hung backend then costs a request its bound, never the adapter's
 * own 30-60 s per attempt. The gateway's backend wrapper (backends/deadline.ts) reads it.
 * A request's deadline is derived from the request: its arrival, plus the configured wait
 * (`backendWaitMs`), plus the time its declared body takes at MIN_BODY_BYTES_PER_SECOND, so an
 * upload that flows is never cut. Once the response's headers are out (`answered`), only the
 * per-call wait bounds the calls that stream its body. Work outside requests (repair, cron) has
 * no request deadline: the per-call wait alone bounds it.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** The slowest body upload a request's deadline allows for (bytes per second). */
export const MIN_BODY_BYTES_PER_SECOND = 256 * 1024;

export interface RequestDeadline {
  /** Epoch ms: no backend call of the request waits past it while the request is unanswered. */
  at: number;
  /** The response's headers are out: its body's calls are bound by the per-call wait only. */
  answered: boolean;
}

const current = new AsyncLocalStorage<RequestDeadline>();

/** The deadline of a request arriving at `arrival` declaring a body of `contentLength` bytes. */
export function deadlineOf(arrival: number, waitMs: number, contentLength: number): number {
  return arrival + waitMs + Math.ceil((Math.max(0, contentLength) / MIN_BODY_BYTES_PER_SECOND) * 1000);
}

export function withRequestDeadline<T>(deadline: RequestDeadline, fn: () => T): T {
  return current.run(deadline, fn);
}

/** How long a backend call made now may wait: `waitMs`, less when the current request's deadline is nearer. */
export function waitBound(waitMs: number, now = Date.now()): { ms: number } {
  const d = current.getStore();
  return { ms: !d || d.answered ? waitMs : Math.max(0, Math.min(waitMs, d.at - now)) };
}
