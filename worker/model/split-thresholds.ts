/**
 * When a catalog partition splits (config `partitions`, docs/PARTITIONS.md): its figures against
 * the thresholds, one rule for the cron's job (upkeep/split-partitions.ts), the admin API and the
 * status's check (ops/checks.ts).
 */
export interface SplitThresholds {
  autoSplit: boolean;
  /** Stored versions a partition may hold before it splits. */
  splitRows: number;
  /** Bytes of SQLite a partition may hold before it splits (a Durable Object holds at most 10 GB). */
  splitBytes: number;
  /**
   * Calls a second a partition may answer, averaged over 5 minutes (model/request-rate.ts),
   * before it splits at the key that halves its traffic. A Durable Object is one thread:
   * Cloudflare documents a soft limit of 1,000 requests a second, and about 400 write
   * transactions a second were measured (docs/PARTITIONS.md).
   */
  splitRequestRate: number;
  /** The status warns past this fraction of either threshold. */
  warnFraction: number;
  /** Two neighbours each under MERGE_FRACTION of every threshold for this long merge back into one. */
  autoMerge: boolean;
  mergeAfterDays: number;
}

/**
 * A partition is small enough to merge under this fraction of every threshold: two such merge into
 * one under half, which a split (at 1) halves again only after it doubled, so a partition near a
 * threshold never splits and merges back and forth.
 */
export const MERGE_FRACTION = 0.25;

/** The config's defaults (worker/config/config.ts). */
export const SPLIT_DEFAULTS: SplitThresholds = {
  autoSplit: true,
  splitRows: 5_000_000,
  splitBytes: 4 * 1024 ** 3,
  splitRequestRate: 500,
  warnFraction: 0.8,
  autoMerge: true,
  mergeAfterDays: 3,
};

/** What a partition is measured by: its stored versions, its database and its calls a second (absent: not measured, 0). */
export interface SplitMeasures {
  versions: number;
  databaseBytes: number;
  requestsPerSecond?: number;
}

/** How far a partition is toward splitting: the largest of its fractions (1: at a threshold). */
export function splitFraction(p: SplitMeasures, t: SplitThresholds): number {
  return Math.max(p.versions / t.splitRows, p.databaseBytes / t.splitBytes, (p.requestsPerSecond ?? 0) / t.splitRequestRate);
}
