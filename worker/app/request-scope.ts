/**
 * RequestScope: the one owner of what an S3 request acquires (coding budget now; whatever later
 * takes a share of the isolate), and the one place it is given back.
 *
 * Why it exists: in workerd, when a client hangs up and nothing keeps its request alive, the
 * request's pending promises are dropped: code waiting on them never runs again, so a `finally`
 * or a stream's `cancel` that would have released budget never does (issue 19: about 3 in 10
 * abandoned downloads leaked their budget until the isolate refused all coded traffic). So:
 * - the whole handler and the response body's pump are kept alive with `waitUntil` until they
 *   settle, and both end early when the client is gone (`signal`: the request's own, which
 *   workerd aborts on a disconnect before the response; the pump also sees a failed write);
 * - every budget lease is adopted by the scope when granted, so when the request ends with a
 *   lease still held, that is reported loudly and the lease reclaimed (`end`): a bug can cost
 *   one log line, never the isolate's ability to serve.
 * The request ends once: when the handler's response has no streamed body, after the handler;
 * otherwise when the streamed body ends, fails or is cancelled (`stream`).
 */
import type { WaitUntil } from './background.ts';
import type { BudgetHolder, BudgetLease } from '../engine/index.ts';
import type { RequestOwner } from '../s3/context.ts';

export class RequestScope implements BudgetHolder, WaitUntil, RequestOwner {
  /** The S3 operation once known (the budget's holder label). */
  label = 'request';
  /** The signer (or an anonymous client's address) once known: whose budget share it uses. */
  tenant: string | undefined = undefined;
  private readonly leases = new Set<BudgetLease>();
  private streaming = false;
  private body: ReadableStream<Uint8Array> | undefined;
  private ended = false;

  constructor(
    /** Aborted when the client is gone; never aborted where the platform gives no signal. */
    readonly signal: AbortSignal | undefined,
    private readonly ctx: WaitUntil | undefined,
  ) {}

  adopt(lease: BudgetLease): void {
    if (this.ended) lease.reclaim('granted to a request that had already ended');
    else this.leases.add(lease);
  }

  /** Whether budget this request holds is wanted by requests waiting for it. */
  contended(): boolean {
    for (const lease of this.leases) if (lease.contended()) return true;
    return false;
  }

  /** Keeps `p` running after the response is returned or the client is gone, until it settles. */
  waitUntil(p: Promise<unknown>): void {
    this.ctx?.waitUntil(p);
  }

  /** The response `body` is streamed by `pump`: the request ends when it settles. */
  stream(pump: Promise<void>, body: ReadableStream<Uint8Array>): void {
    this.streaming = true;
    this.body = body;
    this.waitUntil(pump.finally(() => this.end()));
  }

  /**
   * The streamed body will never be sent (an error after the handler returned it: the error's
   * answer goes out instead): cancel it, so its pump ends now and gives back what it holds.
   */
  discardStream(reason: unknown): void {
    this.body?.cancel(reason).catch(() => {});
  }

  /** The handler is done: the request ends now unless its body streams on. */
  handled(): void {
    if (!this.streaming) this.end();
  }

  /** The request is over: whatever it still holds is a leak, reclaimed and reported. */
  private end(): void {
    if (this.ended) return;
    this.ended = true;
    for (const lease of this.leases) if (!lease.released) lease.reclaim(`held by ${this.label} after the request ended`);
    this.leases.clear();
  }
}
