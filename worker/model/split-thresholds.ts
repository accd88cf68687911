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
  /** The status warns past this fraction of either threshold. */
  warnFraction: number;
}

/** The config's defaults (worker/config/config.ts). */
export const SPLIT_DEFAULTS: SplitThresholds = { autoSplit: true, splitRows: 5_000_000, splitBytes: 4 * 1024 ** 3, warnFraction: 0.8 };

/** How far a partition is toward splitting: the larger of its two fractions (1: at a threshold). */
export function splitFraction(p: { versions: number; databaseBytes: number }, t: SplitThresholds): number {
  return Math.max(p.versions / t.splitRows, p.databaseBytes / t.splitBytes);
}
