/**
 * The background scrubber (run by the cron trigger with the collector): walks each bucket's
 * objects a slice per run, resuming from a cursor kept in the catalog, and checks every shard of
 * every unit, so damage on objects nobody reads is found and repaired too (MinIO's background
 * heal, in small steps). Mode 'heads' asks each backend for the shard's size (one cheap request
 * per shard, no egress: finds lost and truncated shards); 'verify' reads every shard and checks
 * each block's checksum and the footer digest (also finds bit rot, at the cost of reading the
 * stored bytes). Damaged shards are queued for repair; a backend that does not answer is skipped
 * (the reads and writes that meet it report it).
 * A run makes at most `maxCalls` shard checks and may stop inside an object (a multipart object
 * can have thousands of units): the cursor then keeps the unit to resume at, so no unit is ever
 * skipped, and the object counts as checked only once all its units are.
 */
import { isBackendError, type Backend } from '../../backends/types.ts';
import type { Catalog, ScrubCursor } from '../catalog/types.ts';
import { MAX_OPEN_SUBREQUESTS, probeShardSize, type RepairTask, Semaphore, ShardReadError, type ShardState, verifyShardFile } from '../engine/index.ts';
import type { CodedUnit } from '../format/manifest.ts';
import { shardKey } from '../format/shard-key.ts';

export interface ScrubOptions {
  mode: 'heads' | 'verify';
  /** Objects checked per bucket per run. */
  objectsPerRun: number;
}

export interface ScrubReport {
  objects: number;
  shards: number;
  damaged: number;
}

export async function scrubBatch(catalog: Catalog, byId: Map<string, Backend>, options: ScrubOptions, enqueueRepair: (task: RepairTask) => void, maxCalls = 600): Promise<ScrubReport> {
  const report: ScrubReport = { objects: 0, shards: 0, damaged: 0 };
  const sem = new Semaphore(MAX_OPEN_SUBREQUESTS);
  // A Worker invocation has a subrequest limit: at most `maxCalls` shard checks per run, and the
  // first bucket rotates from run to run so a large one cannot starve the others.
  const buckets = (await catalog.listBucketRecords()).map((b) => b.name);
  const first = buckets.length ? Math.floor(Date.now() / 60_000) % buckets.length : 0;
  for (const bucket of [...buckets.slice(first), ...buckets.slice(0, first)]) {
    if (report.shards >= maxCalls) break;
    const cursor = await catalog.getScrubCursor(bucket).catch(() => null);
    const page = await catalog.listManifests(bucket, { prefix: '', delimiter: null, startAfter: cursor?.afterKey ?? null, maxKeys: options.objectsPerRun });
    let afterKey = cursor?.afterKey ?? null;
    let resume: ScrubCursor['resume'];
    for (const { key } of page.objects) {
      const manifest = await catalog.getManifest(bucket, key);
      if (manifest?.storage.kind === 'coded') {
        // A run that stopped inside this object resumes at the unit it had not checked.
        const units = manifest.storage.units;
        let u = cursor?.resume?.key === key ? Math.min(cursor.resume.unit, units.length) : 0;
        if (u === 0) report.objects++;
        for (; u < units.length; u++) {
          const unit = units[u]!;
          // Out of calls: stop before this unit (every run checks at least one), resume here.
          if (report.shards > 0 && report.shards + unit.placement.length > maxCalls) break;
          const verdicts = await Promise.all(unit.placement.map((_, i) => sem.run(() => checkShard(bucket, unit, i, byId, options.mode))));
          const damaged = verdicts.flatMap((v, i) => (v === 'damaged' ? [i] : []));
          report.shards += verdicts.length;
          report.damaged += damaged.length;
          if (damaged.length) enqueueRepair({ bucket, key, unitId: unit.unitId, shards: damaged, reason: `corrupt: found by the scrubber (${options.mode})` });
        }
        if (u < units.length) {
          resume = { key, unit: u };
          break;
        }
      }
      afterKey = key;
      if (report.shards >= maxCalls) break;
    }
    const atEnd = !resume && !page.isTruncated && afterKey === (page.objects.at(-1)?.key ?? afterKey);
    // Past the bucket's last key, the next run starts a new pass.
    await catalog.setScrubCursor(bucket, atEnd ? null : { afterKey, ...(resume ? { resume } : {}) });
  }
  return report;
}

/** A backend removed from the config counts as unreachable: the placement is recorded, not ours to rewrite. */
async function checkShard(bucket: string, unit: CodedUnit, i: number, byId: Map<string, Backend>, mode: ScrubOptions['mode']): Promise<ShardState> {
  const backend = byId.get(unit.placement[i]!);
  if (mode === 'heads' || !backend) return probeShardSize(backend, bucket, unit, i);
  try {
    await verifyShardFile(backend, shardKey(bucket, unit.unitId, i), unit, i);
    return 'ok';
  } catch (err) {
    if (isBackendError(err) && err.transient) return 'unreachable';
    if (err instanceof ShardReadError && err.reason === 'unavailable') return 'unreachable';
    return 'damaged';
  }
}
