/**
 * What this isolate knows of which backends are down (issue 37, "fast refusal"): a backend whose
 * latest call failed as unreachable (probes included) is down for a while, after which calls go to
 * it again (one may then find it back): RETRY_DOWN_AFTER_MS when it hung (Timeout: each call to it
 * costs a request its whole wait), only REFUSED_DOWN_MS when it refused at once (Unavailable: a
 * call costs milliseconds, and a backend that restarts is back within seconds). One an operator
 * put in maintenance (config `maintenance: true`) is always down. The gateway feeds it every
 * backend call's outcome (worker/gateway.ts, the metered backends' reports).
 * The engine uses it to refuse at once what cannot succeed: a write whose placement reaches fewer
 * backends than its write quorum, a read of a unit with fewer than k shards on reachable backends
 * (503, as a quorum missed after the calls); and to read around a down backend's shards without
 * calling it (unit-store.ts). Before refusing on knowledge older than RECHECK_AFTER_MS it asks the
 * backends once more (`recheck`: one probe each, shared by every request meanwhile, waited for at
 * most RECHECK_WAIT_MS), so a backend that is back is not refused for the rest of the window.
 */
import { isBackendError, type Backend } from '../../backends/types.ts';

export const RETRY_DOWN_AFTER_MS = 15_000;
/** How long a backend whose latest call failed at once (connection refused, a 5xx) counts as down. */
export const REFUSED_DOWN_MS = 2_000;
/** A refusal on knowledge this old asks the backends again first. */
export const RECHECK_AFTER_MS = 1000;
/** The longest a request waits for that recheck (a hung backend's probe goes on in the background, bounded by its wait). */
export const RECHECK_WAIT_MS = 1000;
/**
 * A probe in flight this long is taken as abandoned and may be started again: a probe belongs to
 * the request that started it, and when that request ends first the runtime drops its I/O, so its
 * promise may never settle (workerd). Longer than a probe's own bound at the default backend wait
 * (config backendWaitMs, 10 s); with a longer configured wait a probe still running may be joined
 * by a second one, which costs one more HEAD of that backend, never a wrong answer.
 */
export const PROBE_ABANDONED_MS = RETRY_DOWN_AFTER_MS;
/** The key a recheck HEADs: it never exists (outside the shard prefix), NotFound is the healthy answer (ops/probe.ts's too). */
const RECHECK_KEY = 'shardgate-probe';

export class BackendReachability {
  /** When each backend's latest call failed as unreachable, and whether it hung, until a call succeeds. */
  private readonly failedAt = new Map<string, { at: number; hung: boolean }>();
  /** Rechecks in flight, by backend, with when each started: one probe at a time each. */
  private readonly rechecking = new Map<string, { probe: Promise<void>; at: number }>();

  constructor(
    /** Backends in maintenance: known down, never called for reads or new shards. */
    readonly maintenance: ReadonlySet<string> = new Set(),
    private readonly now: () => number = () => Date.now(),
  ) {}

  /** A call to `backendId` ended: answered (`ok`, a NotFound included) or failed as unreachable (`hung`: it timed out). */
  report(backendId: string, ok: boolean, hung = false): void {
    if (ok) this.failedAt.delete(backendId);
    else this.failedAt.set(backendId, { at: this.now(), hung });
  }

  /** Down now: in maintenance, or failed as unreachable less than its window ago. */
  isDown(backendId: string): boolean {
    if (this.maintenance.has(backendId)) return true;
    const f = this.failedAt.get(backendId);
    return f !== undefined && this.now() - f.at < (f.hung ? RETRY_DOWN_AFTER_MS : REFUSED_DOWN_MS);
  }

  /** Its latest call or probe failed (or it is in maintenance), however long ago: what a health answer says. */
  failing(backendId: string): boolean {
    return this.maintenance.has(backendId) || this.failedAt.has(backendId);
  }

  /**
   * Asks each of `backends` known down (not in maintenance) for more than RECHECK_AFTER_MS
   * whether it is back: one HEAD of a key that never exists, and waits for the probes it started
   * at most RECHECK_WAIT_MS; a backend already being asked is not waited for again (while a hung
   * backend's probe runs to its bound, the other requests are refused at once). Its outcome is
   * reported like any call's.
   */
  async recheck(backends: readonly Backend[]): Promise<void> {
    const stale = backends.filter(
      (b) => !this.maintenance.has(b.id) && !this.probing(b.id) && this.isDown(b.id) && this.now() - this.failedAt.get(b.id)!.at >= RECHECK_AFTER_MS,
    );
    if (!stale.length) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, RECHECK_WAIT_MS)));
    try {
      await Promise.race([Promise.all(stale.map((b) => this.probe(b))), waited]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** A probe of `backendId` is in flight (and not abandoned: PROBE_ABANDONED_MS). */
  private probing(backendId: string): boolean {
    const r = this.rechecking.get(backendId);
    return r !== undefined && this.now() - r.at < PROBE_ABANDONED_MS;
  }

  private probe(b: Backend): Promise<void> {
    if (this.probing(b.id)) return this.rechecking.get(b.id)!.probe;
    const probe: Promise<void> = b
      .head(RECHECK_KEY)
      .then(
        () => this.report(b.id, true),
        (err: unknown) => this.report(b.id, isBackendError(err, 'NotFound') || (isBackendError(err) && !err.transient), isBackendError(err, 'Timeout')),
      )
      // Only its own entry: an abandoned probe that settles late must not drop its successor's.
      .finally(() => this.rechecking.get(b.id)?.probe === probe && this.rechecking.delete(b.id));
    this.rechecking.set(b.id, { probe, at: this.now() });
    return probe;
  }
}
