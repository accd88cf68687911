/**
 * The operator's repair pass (`POST /_shardgate/admin/repair`, `shardgate repair`): repairs, now
 * and in this request, the units the catalog lists as degraded (shards missed by a write), the
 * same work the repair queue does for each (runRepair), at most `limit` units per call so one
 * request stays within a Worker invocation's subrequests. A unit whose backend is still down
 * fails and stays listed; the caller calls again until `remaining` is 0 or nothing moves.
 * `prefix` limits both to keys that start with it (the worklist is in key order: a prefix is one
 * range of it).
 * Known gap: only units recorded degraded; damage nobody has found yet is the scrubber's job.
 */
import { DEAD_LETTER_ATTEMPTS } from '../catalog/types.ts';
import type { HealthCatalog, UpkeepCatalog } from '../catalog/ports.ts';

/** What a sweep of the worklists reads and reports: the upkeep port and each bucket's health. */
export type SweepCatalog = UpkeepCatalog & Pick<HealthCatalog, 'bucketHealth'>;
import type { RepairTask } from '../engine/index.ts';
import { forEachBucket } from './each-bucket.ts';
import { errorMessage } from '../model/error-message.ts';

export interface RepairSweepResult {
  attempted: number;
  repaired: number;
  failed: { bucket: string; key: string; unitId: string; error: string }[];
  /** Degraded units left in the buckets (and under the prefix) swept, after this pass. */
  remaining: number;
}

/**
 * Every degraded unit of `bucket` under `prefix` in key order, a page at a time, from `after`:
 * the worklist's key order makes a prefix one range, started at the prefix itself.
 */
async function* degradedUnder(catalog: SweepCatalog, bucket: string, prefix: string) {
  let from: { key: string; unitId: string } | null = prefix ? { key: prefix, unitId: '' } : null;
  for (;;) {
    const page = await catalog.listDegradedUnits(bucket, from, 100);
    for (const u of page) {
      if (!u.key.startsWith(prefix)) {
        if (u.key > prefix) return; // past the prefix's range
        continue;
      }
      yield u;
    }
    if (page.length < 100) return;
    from = { key: page.at(-1)!.key, unitId: page.at(-1)!.unitId };
  }
}

export async function repairDegraded(
  catalog: SweepCatalog,
  repair: (task: RepairTask) => Promise<void>,
  o: { bucket?: string; prefix?: string; limit: number },
): Promise<RepairSweepResult> {
  const prefix = o.prefix ?? '';
  const result: RepairSweepResult = { attempted: 0, repaired: 0, failed: [], remaining: 0 };
  await forEachBucket(
    catalog,
    async (bucket) => {
      if (result.attempted >= o.limit) return false;
      // The units to try are taken first: a repair changes the worklist being paged through.
      const todo = [];
      for await (const u of degradedUnder(catalog, bucket, prefix)) {
        todo.push(u);
        if (result.attempted + todo.length >= o.limit) break;
      }
      for (const u of todo) {
        result.attempted++;
        try {
          await repair({ bucket, key: u.key, unitId: u.unitId, shards: u.missing, reason: { kind: 'operator' } });
          result.repaired++;
        } catch (err) {
          const error = errorMessage(err);
          result.failed.push({ bucket, key: u.key, unitId: u.unitId, error });
          // A failed attempt like any other: it backs off and shows on the worklist (--list).
          await catalog.repairFailed(bucket, u.unitId, error, [], u.key).catch(() => {});
        }
      }
    },
    { only: o.bucket },
  );
  // What is left: in every bucket (those the limit left unswept too), or the one named.
  await forEachBucket(
    catalog,
    async (bucket) => {
      if (!prefix) result.remaining += (await catalog.bucketHealth(bucket, new Date())).degradedUnits;
      else for await (const _ of degradedUnder(catalog, bucket, prefix)) result.remaining++;
    },
    { only: o.bucket },
  );
  return result;
}

export interface WorklistEntry {
  bucket: string;
  key: string;
  unitId: string;
  missing: number[];
  since: string;
  attempts: number;
  nextAttemptAt?: string;
  lastError?: string;
}

/**
 * The buckets' repair worklists as they are, for the operator (`shardgate repair --list`):
 * `stuckOnly` keeps the units tried DEAD_LETTER_ATTEMPTS times or more, the dead letters.
 * At most `limit` entries; `truncated` when more were there.
 */
export async function listWorklist(
  catalog: SweepCatalog,
  o: { bucket?: string; prefix?: string; limit: number; stuckOnly: boolean },
): Promise<{ units: WorklistEntry[]; truncated: boolean }> {
  const units: WorklistEntry[] = [];
  let truncated = false;
  await forEachBucket(
    catalog,
    async (bucket) => {
      for await (const u of degradedUnder(catalog, bucket, o.prefix ?? '')) {
        if (o.stuckOnly && u.attempts < DEAD_LETTER_ATTEMPTS) continue;
        if (units.length === o.limit) {
          truncated = true;
          return false;
        }
        units.push({
          bucket,
          key: u.key,
          unitId: u.unitId,
          missing: u.missing,
          since: new Date(u.since).toISOString(),
          attempts: u.attempts,
          ...(u.nextAttemptAt ? { nextAttemptAt: new Date(u.nextAttemptAt).toISOString() } : {}),
          ...(u.lastError ? { lastError: u.lastError } : {}),
        });
      }
    },
    { only: o.bucket },
  );
  return { units, truncated };
}
