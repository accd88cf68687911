/**
 * RepairRouter: where the gateway sends what it learns about damage and health (issue 15).
 *
 * The record of what needs repair is each bucket's worklist in the catalog (catalog/sql-repairs.ts),
 * never a queue message or an isolate's memory; the catalog's alarm hands due units to the
 * repair queue, whose consumer reports back. So:
 * - a write that missed shards: already on the worklist (its commit recorded them and set the
 *   alarm); nothing to send;
 * - shards a read or the scrubber found missing or rotten: recorded on the worklist (markMissing:
 *   reads skip them from then on), due at once;
 * - a shard whose backend did not answer: not damage; the backend's health is the ops meter's;
 * - a read of a unit that is already degraded: wakes the bucket's worklist if it was idle;
 * - a backend seen answering again after it was down: every bucket's worklist is due at once
 *   (repair follows health, instead of waiting for the next retry).
 * Without a repair queue (tests, a config without one) the router repairs in the background of
 * the request that found the damage, once; the cron's sweep is then what retries.
 * Every call is fire-and-forget for the caller and never rejects unhandled: failures are logged.
 */
import type { BackendCallReport } from '../../backends/metered.ts';
import type { UpkeepCatalog } from '../catalog/ports.ts';
import type { RepairTask } from '../engine/index.ts';
import { errorMessage } from '../model/error-message.ts';

/** Failures that mean "the backend is not there" (as the ops meter counts them). */
const DOWN: ReadonlySet<string> = new Set(['Unavailable', 'Timeout', 'Throttled']);
/** One wake-up per bucket (degraded reads) and per backend (recoveries) per isolate in this long. */
const DEBOUNCE_MS = 2000;

export interface RepairRouterDeps {
  catalog: UpkeepCatalog;
  /** True when a repair queue is bound: the catalog's alarms drive repairs. */
  queued: boolean;
  /** Repairs one task now (queue-less gateways). */
  repairNow: (task: RepairTask) => Promise<void>;
  /** Keeps background work alive with the current request. */
  keepAlive: (p: Promise<unknown>) => void;
  log: (line: Record<string, unknown>, error?: boolean) => void;
  now?: () => number;
}

export class RepairRouter {
  private readonly down = new Set<string>();
  private readonly lastWake = new Map<string, number>();
  private readonly now: () => number;

  constructor(private readonly deps: RepairRouterDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** Damage found by a write, a read or the scrubber. */
  report(task: RepairTask): void {
    const { kind } = task.reason;
    if (kind === 'unavailable') return;
    if (!this.deps.queued) return this.background('repair', task.bucket, () => this.deps.repairNow(task));
    if (kind === 'write-missed') return; // recorded by its commit
    this.background('record damage', task.bucket, () => this.deps.catalog.markMissing(task.bucket, task.unitId, task.shards, task.key));
  }

  /** A read met a unit with shards recorded missing. */
  degradedRead(bucket: string): void {
    if (!this.deps.queued || !this.due(`bucket ${bucket}`)) return;
    this.background('wake repairs', bucket, () => this.deps.catalog.repairSoon(bucket, false));
  }

  /** Every backend call's outcome (the metered backends' sink). */
  backendCall(r: BackendCallReport): void {
    if (DOWN.has(r.outcome)) {
      this.down.add(r.backend);
      return;
    }
    if (r.outcome !== 'ok' || !this.down.delete(r.backend)) return;
    if (!this.deps.queued || !this.due(`backend ${r.backend}`)) return;
    this.deps.log({ msg: 'repair', event: 'backend back', backend: r.backend });
    this.background('wake repairs', null, async () => {
      const buckets = await this.deps.catalog.listBucketRecords();
      await Promise.all(buckets.map((b) => this.deps.catalog.repairSoon(b.name, true, r.backend)));
    });
  }

  private due(id: string): boolean {
    const at = this.now();
    if (at - (this.lastWake.get(id) ?? -Infinity) < DEBOUNCE_MS) return false;
    this.lastWake.set(id, at);
    return true;
  }

  private background(what: string, bucket: string | null, fn: () => Promise<unknown>): void {
    // On the next turn: not inside the caller's commit or read path.
    const p = new Promise((resolve) => setTimeout(resolve, 0)).then(fn).catch((err: unknown) => {
      this.deps.log({ msg: 'repair', level: 'warn', event: `could not ${what}`, bucket: bucket ?? undefined, error: errorMessage(err) });
    });
    this.deps.keepAlive(p);
  }
}
