/**
 * The operator's repair pass (`POST /_shardgate/admin/repair`, `shardgate repair`): repairs, now
 * and in this request, the units the catalog lists as degraded (shards missed by a write), the
 * same work the repair queue does for each (runRepair), at most `limit` units per call so one
 * request stays within a Worker invocation's subrequests. A unit whose backend is still down
 * fails and stays listed; the caller calls again until `remaining` is 0 or nothing moves.
 * Known gap: only units recorded degraded; damage nobody has found yet is the scrubber's job.
 */
import { DEAD_LETTER_ATTEMPTS, type Catalog } from '../catalog/types.ts';
import type { RepairTask } from '../engine/index.ts';

export interface RepairSweepResult {
  attempted: number;
  repaired: number;
  failed: { bucket: string; key: string; unitId: string; error: string }[];
  /** Degraded units left in the buckets swept, after this pass. */
  remaining: number;
}

export async function repairDegraded(catalog: Catalog, repair: (task: RepairTask) => Promise<void>, o: { bucket?: string; limit: number }): Promise<RepairSweepResult> {
  const buckets = o.bucket ? [o.bucket] : (await catalog.listBucketRecords()).map((b) => b.name);
  const result: RepairSweepResult = { attempted: 0, repaired: 0, failed: [], remaining: 0 };
  for (const bucket of buckets) {
    let after: { key: string; unitId: string } | null = null;
    while (result.attempted < o.limit) {
      const page = await catalog.listDegradedUnits(bucket, after, Math.min(100, o.limit - result.attempted));
      if (page.length === 0) break;
      for (const u of page) {
        result.attempted++;
        try {
          await repair({ bucket, key: u.key, unitId: u.unitId, shards: u.missing, reason: { kind: 'operator' } });
          result.repaired++;
        } catch (err) {
          const error = String((err as Error)?.message ?? err);
          result.failed.push({ bucket, key: u.key, unitId: u.unitId, error });
          // A failed attempt like any other: it backs off and shows on the worklist (--list).
          await catalog.repairFailed(bucket, u.unitId, error).catch(() => {});
        }
      }
      after = { key: page.at(-1)!.key, unitId: page.at(-1)!.unitId };
    }
  }
  for (const bucket of buckets) result.remaining += (await catalog.bucketHealth(bucket, new Date())).degradedUnits;
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
export async function listWorklist(catalog: Catalog, o: { bucket?: string; limit: number; stuckOnly: boolean }): Promise<{ units: WorklistEntry[]; truncated: boolean }> {
  const buckets = o.bucket ? [o.bucket] : (await catalog.listBucketRecords()).map((b) => b.name);
  const units: WorklistEntry[] = [];
  for (const bucket of buckets) {
    let after: { key: string; unitId: string } | null = null;
    for (;;) {
      const page = await catalog.listDegradedUnits(bucket, after, 100);
      for (const u of page) {
        if (o.stuckOnly && u.attempts < DEAD_LETTER_ATTEMPTS) continue;
        if (units.length === o.limit) return { units, truncated: true };
        units.push({
          bucket, key: u.key, unitId: u.unitId, missing: u.missing, since: new Date(u.since).toISOString(), attempts: u.attempts,
          ...(u.nextAttemptAt ? { nextAttemptAt: new Date(u.nextAttemptAt).toISOString() } : {}),
          ...(u.lastError ? { lastError: u.lastError } : {}),
        });
      }
      if (page.length < 100) break;
      after = { key: page.at(-1)!.key, unitId: page.at(-1)!.unitId };
    }
  }
  return { units, truncated: false };
}
