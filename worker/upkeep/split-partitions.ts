/**
 * Partitions against their split thresholds (config `partitions`, docs/PARTITIONS.md "Splits on
 * line"): what the status shows of each bucket's partitions, and the cron's job that splits a
 * partition over a threshold (Catalog.splitPartition, on line: the bucket keeps answering): at its
 * median key when it is too big, at the key that halves its recent calls when it is too busy
 * (model/request-rate.ts: each partition counts the calls it answers). A bucket that never split is
 * one partition, its root; it is measured the same way. And the job merges two neighbours back into
 * one (Catalog.mergePartition, on line too) once each has stayed under MERGE_FRACTION of every
 * threshold for `mergeAfterDays`: the root remembers since when each has been small
 * (Catalog.markSmallPartitions), so days of small are counted across cron runs and isolates.
 */
import type { PartitionFigures } from '../catalog/types.ts';
import type { Catalog } from '../catalog/ports.ts';
import { S3Error } from '../model/errors.ts';
import { errorMessage } from '../model/error-message.ts';
import { forEachBucket } from './each-bucket.ts';
import { MERGE_FRACTION, splitFraction, type SplitThresholds } from '../model/split-thresholds.ts';

export type { SplitThresholds };

/** A partition's figures as fractions of the thresholds, and what they call for. */
export interface PartitionAssessment extends PartitionFigures {
  /** Stored versions over `splitRows`, database bytes over `splitBytes`, calls a second over `splitRequestRate` (1: at the threshold). */
  rowsFraction: number;
  bytesFraction: number;
  rateFraction: number;
  /** 'split': over a threshold (the cron splits it); 'warn': past warnFraction of one; 'ok'. */
  verdict: 'ok' | 'warn' | 'split';
}

export function assess(p: PartitionFigures, t: SplitThresholds): PartitionAssessment {
  const rowsFraction = p.versions / t.splitRows;
  const bytesFraction = p.databaseBytes / t.splitBytes;
  const rateFraction = p.requestsPerSecond / t.splitRequestRate;
  const worst = splitFraction(p, t);
  return { ...p, rowsFraction, bytesFraction, rateFraction, verdict: worst >= 1 ? 'split' : worst >= t.warnFraction ? 'warn' : 'ok' };
}

export interface SplitReport {
  buckets: number;
  partitions: number;
  /** `for`: what the split relieves (a partition over both is split for its size, at its median key). */
  split: { bucket: string; low: string; at: string; for: 'size' | 'rate' }[];
  /** `low`: the range that merged into the one starting at `into`. */
  merged: { bucket: string; low: string; into: string }[];
  failed: { bucket: string; low: string; error: string }[];
  /** Partitions past warnFraction of a threshold (not yet over it). */
  warned: number;
  unfinished: boolean;
}

/**
 * Splits each partition over a threshold, at most `maxSplits` a run (a split copies half a
 * partition: each is minutes for millions of rows), until `deadline`.
 */
export async function splitDuePartitions(
  catalog: Pick<Catalog, 'listBucketRecords' | 'partitionsOf' | 'splitPartition' | 'mergePartition' | 'markSmallPartitions'>,
  t: SplitThresholds,
  o: { deadline: number; maxSplits?: number; maxMerges?: number; now?: number },
): Promise<SplitReport> {
  const report: SplitReport = { buckets: 0, partitions: 0, split: [], merged: [], failed: [], warned: 0, unfinished: false };
  const maxSplits = o.maxSplits ?? 2;
  const maxMerges = o.maxMerges ?? 2;
  const now = o.now ?? Date.now();
  const whole = await forEachBucket(catalog, async (bucket) => {
    if (Date.now() >= o.deadline || report.split.length >= maxSplits) return false;
    report.buckets++;
    const partitions = (await catalog.partitionsOf(bucket).catch(() => [])).map((p) => assess(p, t));
    report.partitions += partitions.length;
    if (partitions.length > 1 && t.autoMerge) await mergeSmall(catalog, bucket, partitions, t, now, report, maxMerges);
    for (const p of partitions) {
      if (p.verdict === 'warn') report.warned++;
      if (p.verdict !== 'split' || p.splitting === 'committing' || (p.merging ?? null) !== null || !t.autoSplit) continue;
      if (report.split.length >= maxSplits) return false;
      // Too busy but not too big: cut where the traffic halves (its rows' median may leave the hot keys on one side).
      const forRate = p.rowsFraction < 1 && p.bytesFraction < 1;
      if (forRate && p.hotMedian === null) continue; // its calls name no key (walks, sums): a split would not share them
      try {
        const map = await catalog.splitPartition(bucket, p.low, forRate ? p.hotMedian! : undefined);
        const made = map?.ranges.find((r) => r.low > p.low && (p.high === null || r.low < p.high));
        if (made) report.split.push({ bucket, low: p.low, at: made.low, for: forRate ? 'rate' : 'size' });
      } catch (err) {
        // Fewer than two keys (one huge key's versions) cannot be split: the status keeps warning.
        if (!(err instanceof S3Error && err.code === 'InvalidRequest')) report.failed.push({ bucket, low: p.low, error: errorMessage(err) });
      }
    }
  });
  report.unfinished = !whole;
  return report;
}

/** Small enough to merge: under MERGE_FRACTION of every threshold, and no split or merge under way. */
function isSmall(p: PartitionAssessment): boolean {
  return p.splitting === null && (p.merging ?? null) === null && Math.max(p.rowsFraction, p.bytesFraction, p.rateFraction) < MERGE_FRACTION;
}

/** Notes the bucket's small partitions at the root, then merges each pair of neighbours small for `mergeAfterDays` (the upper into the lower). */
async function mergeSmall(
  catalog: Pick<Catalog, 'mergePartition' | 'markSmallPartitions'>,
  bucket: string,
  partitions: PartitionAssessment[],
  t: SplitThresholds,
  now: number,
  report: SplitReport,
  maxMerges: number,
): Promise<void> {
  const since = await catalog.markSmallPartitions(
    bucket,
    partitions.filter(isSmall).map((p) => p.low),
    new Date(now),
  );
  const due = (p: PartitionAssessment) => isSmall(p) && since[p.low] !== undefined && now - since[p.low]! >= t.mergeAfterDays * 86_400_000;
  for (let i = 1; i < partitions.length && report.merged.length < maxMerges; i++) {
    const [lower, upper] = [partitions[i - 1]!, partitions[i]!];
    if (!due(lower) || !due(upper)) continue;
    try {
      await catalog.mergePartition(bucket, upper.low);
      report.merged.push({ bucket, low: upper.low, into: lower.low });
      i++; // the merged range is measured again next run
    } catch (err) {
      // Events waiting for delivery (SlowDown) or a split meanwhile (OperationAborted): tried again next run.
      if (!(err instanceof S3Error && (err.code === 'SlowDown' || err.code === 'OperationAborted')))
        report.failed.push({ bucket, low: upper.low, error: errorMessage(err) });
    }
  }
}
