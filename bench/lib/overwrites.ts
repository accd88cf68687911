/**
 * What a versioned overwrite costs against an unversioned one (issue 25): the same key PUT again
 * and again in two buckets of the same gateway and policy, one never configured for versioning
 * (each PUT replaces the object and hands the old units to the collector) and one with
 * versioning Enabled (each PUT adds a version and keeps the old ones). Per overwrite: catalog
 * calls (Durable Object round trips, by method: exact), workerd CPU and client latency. Batches
 * of the two buckets alternate, their order swapped each repetition, so drift in the shared
 * machine's load falls on both.
 */
import { PutBucketVersioningCommand, CreateBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import { cpuSeconds } from '../../test/support/proc.ts';
import { put, type ClientMode } from './client.ts';
import type { BenchGateway } from './gateway.ts';

export type Versioning = 'unversioned' | 'versioned';
const BUCKETS: Record<Versioning, string> = { unversioned: 'bench-overwrite-plain', versioned: 'bench-overwrite-versioned' };

export interface OverwriteBatch {
  versioning: Versioning;
  size: number;
  ops: number;
  latMs: number[];
  cpuS: number;
  catalog: Record<string, number>;
}

/** Both buckets, created on the default policy; the second with versioning Enabled. */
export async function createOverwriteBuckets(s3: S3Client): Promise<void> {
  for (const Bucket of Object.values(BUCKETS)) await s3.send(new CreateBucketCommand({ Bucket }));
  await s3.send(new PutBucketVersioningCommand({ Bucket: BUCKETS.versioned, VersioningConfiguration: { Status: 'Enabled' } }));
}

/**
 * `ops` overwrites of one key of `size` bytes in the bucket of `versioning`, after one PUT not
 * counted (so that every measured PUT replaces something). The memory backends are purged after
 * the batch (not measured), so the isolate's memory stays flat across repetitions.
 */
export async function overwriteBatch(
  g: BenchGateway,
  s3: S3Client,
  versioning: Versioning,
  size: number,
  ops: number,
  seed: number,
  mode: ClientMode,
): Promise<OverwriteBatch> {
  const bucket = BUCKETS[versioning],
    key = `overwritten-${size}`;
  await put(s3, bucket, key, size, seed, mode);
  await g.control('/__bench/reset');
  const cpu0 = cpuSeconds(g.pid);
  const latMs: number[] = [];
  for (let i = 1; i <= ops; i++) {
    const t = performance.now();
    await put(s3, bucket, key, size, seed + i, mode);
    latMs.push(performance.now() - t);
  }
  const cpuS = cpuSeconds(g.pid) - cpu0;
  const catalog: Record<string, number> = await g.control('/__bench/catalog-stats');
  await g.control('/__bench/purge');
  return { versioning, size, ops, latMs, cpuS, catalog };
}

export interface OverwriteSummary {
  size: number;
  /** Catalog calls per overwrite, by method, over all batches; `varied`: not the same in every batch. */
  catalog: Record<Versioning, Record<string, number>>;
  catalogVaried: Record<Versioning, boolean>;
  catalogPerOp: Record<Versioning, number>;
  p50Ms: Record<Versioning, number>;
  cpuMsPerOp: Record<Versioning, number>;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;

/** Calls per op by method, the upkeep's background methods left out (as the matrix does). */
function perOp(calls: Record<string, number>, ops: number, upkeep: Set<string>): Record<string, number> {
  return Object.fromEntries(
    Object.entries(calls)
      .filter(([name]) => !upkeep.has(name))
      .sort()
      .map(([name, n]) => [name, n / ops]),
  );
}

/** One row per size. */
export function summarizeOverwrites(batches: OverwriteBatch[], upkeep: Set<string>): OverwriteSummary[] {
  const sizes = [...new Set(batches.map((b) => b.size))];
  return sizes.map((size) => {
    const row = { size, catalog: {}, catalogVaried: {}, catalogPerOp: {}, p50Ms: {}, cpuMsPerOp: {} } as OverwriteSummary;
    for (const v of ['unversioned', 'versioned'] as const) {
      const mine = batches.filter((b) => b.size === size && b.versioning === v);
      const ops = mine.reduce((a, b) => a + b.ops, 0);
      const all: Record<string, number> = {};
      for (const b of mine) for (const [name, n] of Object.entries(b.catalog)) all[name] = (all[name] ?? 0) + n;
      row.catalog[v] = perOp(all, ops, upkeep);
      row.catalogVaried[v] = new Set(mine.map((b) => JSON.stringify(perOp(b.catalog, b.ops, upkeep)))).size > 1;
      row.catalogPerOp[v] = Object.values(row.catalog[v]).reduce((a, n) => a + n, 0);
      row.p50Ms[v] = median(mine.flatMap((b) => b.latMs));
      row.cpuMsPerOp[v] = (mine.reduce((a, b) => a + b.cpuS, 0) / ops) * 1000;
    }
    return row;
  });
}
