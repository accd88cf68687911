/**
 * Data health across the gateway: every bucket's health from the catalog (one read of its ledger
 * each, at most 6 at a time), the garbage of deleted buckets, the bucket list's journal, the
 * catalog-loss record, and their sum as a DataSample, the
 * point the plots of degraded objects and repair backlog are drawn from.
 * Known gap: one catalog read per bucket per status; a gateway of thousands of buckets would want
 * these sums kept in one place.
 */
import type { BucketHealth, CatalogLoss, JournalStatus } from '../catalog/types.ts';
import type { HealthCatalog } from '../catalog/ports.ts';
import { BUCKET_LIST_INSTANCE } from '../format/journal.ts';
import type { DataSample } from './types.ts';

export interface DataHealth {
  at: number;
  buckets: BucketHealth[];
  deletedBucketGarbage: { queued: number; due: number };
  /** The bucket list's catalog journal (each bucket's is in its BucketHealth); null before any bucket. */
  bucketListJournal?: JournalStatus | null;
  /** Journal instances the backends hold ahead of the catalog (upkeep/catalog-loss.ts); absent: not read. */
  catalogLoss?: CatalogLoss;
}

export async function readDataHealth(catalog: HealthCatalog, now: Date): Promise<DataHealth> {
  const names = (await catalog.listBucketRecords()).map((b) => b.name);
  const buckets: BucketHealth[] = [];
  for (let i = 0; i < names.length; i += 6) {
    const page = await Promise.all(names.slice(i, i + 6).map((name) => catalog.bucketHealth(name, now).catch(() => null)));
    buckets.push(...page.filter((h): h is BucketHealth => h !== null)); // a bucket deleted meanwhile
  }
  return {
    at: now.getTime(),
    buckets,
    deletedBucketGarbage: await catalog.deletedBucketGarbage(now),
    bucketListJournal: await catalog.journalStatus(BUCKET_LIST_INSTANCE),
    catalogLoss: await catalog.catalogLoss(),
  };
}

export function sampleOf(d: DataHealth): DataSample {
  const sum = (f: (b: BucketHealth) => number) => d.buckets.reduce((n, b) => n + f(b), 0);
  return {
    at: d.at,
    objects: sum((b) => b.objects),
    bytes: sum((b) => b.bytes),
    storedBytes: sum((b) => Object.values(b.backends).reduce((n, x) => n + x.bytes, 0)),
    degradedObjects: sum((b) => b.degradedObjects),
    degradedUnits: sum((b) => b.degradedUnits),
    missingShards: sum((b) => b.missingShards),
    unitsAtRisk: sum((b) => b.redundancy?.atRisk ?? 0),
    unitsLost: sum((b) => b.redundancy?.lost ?? 0),
    garbageQueued: sum((b) => b.garbage.queued) + d.deletedBucketGarbage.queued,
    garbageDue: sum((b) => b.garbage.due) + d.deletedBucketGarbage.due,
    reservationsExpired: sum((b) => b.reservations.expired),
  };
}
