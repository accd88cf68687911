/**
 * The two ends of the repair worklist that run outside a request (issue 15): the queue
 * consumer, and the cron's wake-up of every bucket's worklist. The worklist itself is the
 * catalog's (catalog/sql-repairs.ts): the queue only carries it.
 */
import type { RepairTask } from '../engine/index.ts';
import { RepairBlockedError } from './repair.ts';
import { repairDegraded, type SweepCatalog } from './repair-sweep.ts';
import { errorMessage } from '../model/error-message.ts';

/** Degraded units the cron repairs itself when no repair queue is bound (subrequests per run). */
export const QUEUELESS_REPAIRS_PER_CRON = 50;

export interface WorklistDeps {
  catalog: SweepCatalog;
  /** Repairs one unit (counted and logged by the gateway); throws while it cannot. */
  repair: (task: RepairTask) => Promise<void>;
  log: (line: Record<string, unknown>, error?: boolean) => void;
}

const message = (err: unknown) => errorMessage(err);

/**
 * Repairs each message's unit and acknowledges every message: the bucket's worklist owns retries
 * (backoff, never giving up, stuck units counted), so a failure is reported there, not retried
 * by the queue.
 */
export async function consumeRepairs(messages: readonly { body: RepairTask; ack(): void }[], deps: WorklistDeps): Promise<void> {
  for (const msg of messages) {
    const t = msg.body;
    try {
      await deps.repair(t); // a success takes the unit off the worklist
    } catch (err) {
      // Backends that did not answer back off for the whole bucket (sql-repairs.ts), not only this unit.
      const unreachable = err instanceof RepairBlockedError ? err.unreachable : [];
      await deps.catalog.repairFailed(t.bucket, t.unitId, message(err), unreachable, t.key).catch((e: unknown) => {
        deps.log({
          msg: 'repair',
          level: 'warn',
          event: 'could not record a failed repair',
          bucket: t.bucket,
          key: t.key,
          unitId: t.unitId,
          error: message(e),
        });
      });
    }
    msg.ack();
  }
}

/**
 * The cron's part: every bucket's worklist awake (a no-op for an idle or empty one), the backstop
 * for an alarm that was never set (a wake-up lost with an isolate); without a repair
 * queue the alarms hand nothing on, so the cron repairs a batch itself.
 */
export async function wakeWorklists(deps: WorklistDeps, queued: boolean): Promise<void> {
  const jobs: Promise<unknown>[] = [];
  if (!queued) {
    jobs.push(
      repairDegraded(deps.catalog, deps.repair, { limit: QUEUELESS_REPAIRS_PER_CRON }).catch((err: unknown) => {
        deps.log({ msg: 'repair', level: 'warn', event: 'cron repair pass failed', error: message(err) });
      }),
    );
  }
  jobs.push(
    deps.catalog
      .listBucketRecords()
      .then((buckets) => Promise.all(buckets.map((b) => deps.catalog.repairSoon(b.name, false))))
      .catch((err: unknown) => {
        deps.log({ msg: 'repair', level: 'warn', event: 'could not wake the repair worklists', error: message(err) });
      }),
  );
  await Promise.all(jobs);
}
