/**
 * The background scrubber (run by the cron trigger beside the collector, the lifecycle job and the
 * rest of upkeep: worker/index.ts; `checkShard` also checks the catalog journal's segments,
 * upkeep/journal-upkeep.ts): walks each bucket's
 * units in id order through the catalog's unit index, a slice per run, resuming from a cursor
 * kept in the catalog, and checks every shard of every unit, so damage on objects nobody reads is
 * found and repaired too (MinIO's background heal, in small steps). It walks units, not keys: an
 * object of thousands of parts is thousands of units, each checked whole, and every stored
 * version's units are walked, not only the current one's. Mode 'heads' asks each backend for the
 * shard's size (one cheap request per shard, no egress: finds lost and truncated shards; a HEAD,
 * or with `headsBy: 'tail-read'` a read of the last byte);
 * 'verify' reads every shard and checks each block's checksum and the footer digest (also finds
 * bit rot, at the cost of reading the stored bytes). Damaged shards are reported for repair
 * (`enqueueRepair`: the gateway's repair router puts them on the bucket's repair worklist); a
 * backend that does not answer is skipped (the reads and writes that meet it report it). The
 * first bucket rotates from run to run, so a large bucket cannot starve the others.
 * A run makes at most `maxCalls` shard checks (a Worker invocation has a subrequest limit); the
 * catalog records which units it checked, so coverage (units checked of units stored) is counted,
 * and a pass is complete only once the cursor has passed the last unit.
 */
import { isBackendError, type Backend } from '../../backends/types.ts';
import type { UpkeepCatalog } from '../catalog/ports.ts';
import {
  MAX_OPEN_SUBREQUESTS,
  probeShardSize,
  probeShardTail,
  type RepairTask,
  Semaphore,
  ShardReadError,
  type ShardState,
  verifyShardFile,
} from '../engine/index.ts';
import type { CodedUnit } from '../format/manifest.ts';
import { shardKey } from '../format/shard-key.ts';
import { forEachBucket } from './each-bucket.ts';

export interface ScrubOptions {
  mode: 'heads' | 'verify';
  /** Units checked per bucket per run (at most; the run's shard-check budget may stop it earlier). */
  unitsPerRun: number;
  /**
   * How 'heads' checks a shard: a HEAD (default), or a 1-byte read of its last byte ('tail-read',
   * config scrub.headsBy; the local default): a backend whose HEAD answers from its metadata (the
   * local R2 emulator) says a shard deleted on disk is there.
   */
  headsBy?: 'head' | 'tail-read';
}

export interface ScrubReport {
  /** Units checked whole. */
  units: number;
  shards: number;
  damaged: number;
}

export async function scrubBatch(
  catalog: UpkeepCatalog,
  byId: Map<string, Backend>,
  options: ScrubOptions,
  enqueueRepair: (task: RepairTask) => void,
  maxCalls = 600,
): Promise<ScrubReport> {
  const report: ScrubReport = { units: 0, shards: 0, damaged: 0 };
  const sem = new Semaphore(MAX_OPEN_SUBREQUESTS);
  // The first bucket rotates from run to run so a large one cannot starve the others.
  await forEachBucket(
    catalog,
    async (bucket) => {
      if (report.shards >= maxCalls) return false;
      const cursor = await catalog.getScrubCursor(bucket).catch(() => null); // unreadable now: from the start
      let after = cursor?.afterUnit ?? null;
      const checked: string[] = [];
      let atEnd = false;
      const pageSize = Math.max(1, options.unitsPerRun);
      walk: {
        const page = await catalog.listUnits(bucket, after, pageSize);
        for (const { unit, key } of page) {
          // Out of calls: stop before this unit (every run checks at least one), resume here.
          if (report.shards > 0 && report.shards + unit.placement.length > maxCalls) break walk;
          const verdicts = await Promise.all(unit.placement.map((_, i) => sem.run(() => checkShard(bucket, unit, i, byId, options.mode, options.headsBy))));
          const damaged = verdicts.flatMap((v, i) => (v === 'damaged' ? [i] : []));
          report.shards += verdicts.length;
          report.damaged += damaged.length;
          report.units++;
          if (damaged.length)
            enqueueRepair({ bucket, key, unitId: unit.unitId, shards: damaged, reason: { kind: 'corrupt', by: 'scrubber', detail: options.mode } });
          checked.push(unit.unitId);
          after = unit.unitId;
        }
        // Past the bucket's last unit: the next run starts a new pass.
        atEnd = page.length < pageSize;
      }
      if (!atEnd && after === null) return; // nothing checked yet: the cursor stays where it was
      await catalog.recordScrub(bucket, checked, atEnd ? null : { afterUnit: after! });
    },
    { rotateAt: Date.now() },
  );
  return report;
}

/** A backend removed from the config counts as unreachable: the placement is recorded, not ours to rewrite. */
export async function checkShard(
  bucket: string,
  unit: CodedUnit,
  i: number,
  byId: Map<string, Backend>,
  mode: ScrubOptions['mode'],
  headsBy: ScrubOptions['headsBy'] = 'head',
): Promise<ShardState> {
  const backend = byId.get(unit.placement[i]!);
  if (mode === 'heads' || !backend) return (headsBy === 'tail-read' ? probeShardTail : probeShardSize)(backend, bucket, unit, i);
  try {
    await verifyShardFile(backend, shardKey(bucket, unit.unitId, i), unit, i);
    return 'ok';
  } catch (err) {
    if (isBackendError(err) && err.transient) return 'unreachable';
    if (err instanceof ShardReadError && err.reason === 'unavailable') return 'unreachable';
    return 'damaged';
  }
}
