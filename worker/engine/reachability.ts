/**
 * What this isolate knows of which backends are down (issue 37, "fast refusal"): a backend whose
 * latest call failed as unreachable (Unavailable, Timeout: probes included) is down for
 * `retryAfterMs`, after which calls go to it again (one may then find it back); one an operator put
 * in maintenance (config `maintenance: true`) is always down. The gateway feeds it every backend
 * call's outcome (worker/gateway.ts, the metered backends' reports).
 * The engine uses it to refuse at once what cannot succeed: a write whose placement reaches fewer
 * backends than its write quorum, a read of a unit with fewer than k shards on reachable backends
 * (503, as a quorum missed after the calls); and to read around a down backend's shards without
 * calling it (unit-store.ts).
 */
export const RETRY_DOWN_AFTER_MS = 15_000;

export class BackendReachability {
  /** When each backend's latest call failed as unreachable, until a call succeeds. */
  private readonly failedAt = new Map<string, number>();

  constructor(
    /** Backends in maintenance: known down, never called for reads or new shards. */
    readonly maintenance: ReadonlySet<string> = new Set(),
    private readonly now: () => number = () => Date.now(),
    private readonly retryAfterMs = RETRY_DOWN_AFTER_MS,
  ) {}

  /** A call to `backendId` ended: answered (`ok`, a NotFound included) or failed as unreachable. */
  report(backendId: string, ok: boolean): void {
    if (ok) this.failedAt.delete(backendId);
    else this.failedAt.set(backendId, this.now());
  }

  /** Down now: in maintenance, or failed as unreachable less than retryAfterMs ago. */
  isDown(backendId: string): boolean {
    if (this.maintenance.has(backendId)) return true;
    const at = this.failedAt.get(backendId);
    return at !== undefined && this.now() - at < this.retryAfterMs;
  }
}
