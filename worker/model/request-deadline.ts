/**
 * The deadline of the S3 request being served, carried across awaits (AsyncLocalStorage, as
 * request-notes.ts carries its notes) so that every backend call made for it waits no longer than
 * the request can (issue 37): a hung backend then costs a request its bound, never the adapter's
 * own 30-60 s per attempt. The gateway's backend wrapper (backends/deadline.ts) reads it.
 * A request's deadline is derived from the request: an S3 read (GET, HEAD) must have its
 * answer started within the configured wait (`backendWaitMs`) of its arrival, so all of its
 * backend calls before the response's headers together wait no longer than that; once the headers
 * are out (`answered`), the calls that stream its body are bounded by the per-call wait alone. Any
 * other request (a PUT lasts as long as its client sends its body, a CopyObject as long as the
 * copy, an operator's rebuild or drain as long as its work) has no request deadline: each of its
 * calls is bounded by the per-call wait (backends/deadline.ts: no answer, or no progress while it
 * has a chunk to take). Work outside requests (repair, cron) likewise.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

export interface RequestDeadline {
  /** Epoch ms: no backend call of the request waits past it while the request is unanswered (null: none, a request with a body). */
  at: number | null;
  /** The response's headers are out: its body's calls are bound by the per-call wait only. */
  answered: boolean;
}

const current = new AsyncLocalStorage<RequestDeadline>();

/** The deadline of a request arriving at `arrival`: an S3 read's (`read`), or none. */
export function deadlineOf(arrival: number, waitMs: number, read: boolean): number | null {
  return read ? arrival + waitMs : null;
}

export function withRequestDeadline<T>(deadline: RequestDeadline, fn: () => T): T {
  return current.run(deadline, fn);
}

/**
 * Time the current request waited for the isolate's coding budget (engine/coding-budget.ts) is not
 * a backend's wait: its deadline moves by it. (The budget bounds that wait itself: SlowDown after
 * `maxWaitMs`.) Without this, a GET queued behind stalled downloads for 10 s got its budget with
 * no time left for a single backend call.
 */
export function postponeDeadline(ms: number): void {
  const d = current.getStore();
  if (d && d.at !== null && !d.answered && ms > 0) d.at += ms;
}

/** How long a backend call made now may wait: `waitMs`, less when the current request's deadline is nearer. */
export function waitBound(waitMs: number, now = Date.now()): { ms: number } {
  const d = current.getStore();
  return { ms: !d || d.answered || d.at === null ? waitMs : Math.max(0, Math.min(waitMs, d.at - now)) };
}
