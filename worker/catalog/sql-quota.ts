/**
 * Bucket quotas and usage in one catalog instance (quota.ts has the rules; docs/QUOTAS.md).
 * Synchronous, inside the caller's transaction: a write's quota check is part of the catalog call
 * the write makes anyway (prepareWrite, preparePart, or an inline write's commit), never a call
 * of its own, and reads one state row when the bucket has no quota. With one, it reads two ledger
 * rows (sql-ledger.ts counts every version's bytes and objects in each commit and delete) and sums
 * the sizes of the parts of the uploads in flight.
 */
import type { ObjectManifest } from '../format/manifest.ts';
import { S3Error } from '../model/errors.ts';
import { readState, writeState } from './sql-state.ts';
import type { SqlObjects } from './sql-objects.ts';
import type { BucketHealth } from './types.ts';
import { checkQuota, limitsFor, parseStoredQuota, QUOTA_ROW, type BucketUsage, type QuotaFigures, type StoredQuota } from './quota.ts';

export function readQuota(sql: SqlStorage): StoredQuota | null {
  return parseStoredQuota(readState(sql, QUOTA_ROW));
}

export function writeQuota(sql: SqlStorage, quota: StoredQuota | null): void {
  writeState(sql, QUOTA_ROW, quota === null ? null : JSON.stringify(quota));
}

function ledgerValue(sql: SqlStorage, name: string): number {
  return sql.exec<{ value: number }>('SELECT value FROM ledger WHERE name = ?', name).toArray()[0]?.value ?? 0;
}

/** Bytes of the parts stored for uploads in flight (all uploads, or one). */
function partBytes(sql: SqlStorage, uploadId?: string): number {
  const q = "SELECT COALESCE(SUM(json_extract(record, '$.size')), 0) AS n FROM parts";
  return (uploadId === undefined ? sql.exec<{ n: number }>(q) : sql.exec<{ n: number }>(`${q} WHERE upload_id = ?`, uploadId)).one().n;
}

/** What a quota counts in this instance: every version's bytes and parts in flight; versions holding data. */
export function quotaFigures(sql: SqlStorage): QuotaFigures {
  return { bytes: ledgerValue(sql, 'bytes') + partBytes(sql), objects: ledgerValue(sql, 'objects') };
}

/**
 * What writing `size` bytes as `key`'s new version changes: a bucket not versioned Enabled
 * replaces the key's null version (its bytes and its object are given back).
 */
export function writeGrowth(sql: SqlStorage, objects: SqlObjects, key: string, size: number): QuotaFigures {
  if (objects.versioning() === 'Enabled') return { bytes: size, objects: 1 };
  const row = sql
    .exec<{ manifest: string; delete_marker: number }>('SELECT manifest, delete_marker FROM versions WHERE key = ? AND null_version = 1', key)
    .toArray()[0];
  if (!row || row.delete_marker) return { bytes: size, objects: 1 };
  return { bytes: size - (JSON.parse(row.manifest) as ObjectManifest).size, objects: 0 };
}

/** A completion: the object's version as a write, less the upload's parts (counted already while in flight). */
export function completionGrowth(sql: SqlStorage, objects: SqlObjects, key: string, uploadId: string, size: number): QuotaFigures {
  const write = writeGrowth(sql, objects, key, size);
  return { bytes: write.bytes - partBytes(sql, uploadId), objects: write.objects };
}

/**
 * Refuses (QuotaExceeded) a write growing a limited figure past this instance's limit: the quota,
 * or its share when the bucket is split (`low`: this instance's range, null when it owns the bucket
 * whole). One state-row read when the bucket has no quota.
 */
export function enforceQuota(sql: SqlStorage, bucket: string, low: string | null, grow: () => QuotaFigures): void {
  const quota = readQuota(sql);
  if (quota === null) return;
  // Only a limited figure's growth is checked (an objects-only quota never sums the parts).
  const growth = grow();
  const grows = (figure: 'bytes' | 'objects') => quota[figure] !== null && growth[figure] > 0;
  if (!grows('bytes') && !grows('objects')) return;
  // Split, and no share for this range: the shares are being cut, or the quota was set before the
  // split and its shares are yet to be cut (DurableCatalog.splitBucketStatically cuts them).
  if (low !== null && (quota.shares === undefined || !Object.hasOwn(quota.shares, low)))
    // The shares are being cut (quota-set.ts: growth stopped, usage read, shares set): a moment.
    // 503 SlowDown, which every SDK retries, rather than a refusal that reads as final.
    throw new S3Error('SlowDown', `The quota of bucket ${bucket} is being shared out again among its partitions; please retry.`);
  const used = grows('bytes') ? quotaFigures(sql) : { bytes: 0, objects: ledgerValue(sql, 'objects') };
  checkQuota(bucket, limitsFor(quota, low), used, { bytes: grows('bytes') ? growth.bytes : 0, objects: growth.objects }, low !== null);
}

/** This instance's usage in detail (`low`: its range when the bucket is split). */
export function instanceUsage(sql: SqlStorage, low: string | null): BucketUsage {
  const ledger = new Map(
    sql
      .exec<{ name: string; value: number }>("SELECT name, value FROM ledger WHERE name IN ('bytes', 'objects', 'inline-bytes') OR name LIKE 'stored:%'")
      .toArray()
      .map((r) => [r.name, r.value]),
  );
  const backends: Record<string, number> = {};
  for (const [name, n] of ledger) if (name.startsWith('stored:') && n !== 0) backends[name.slice('stored:'.length)] = n;
  const versions = sql
    .exec<{ versions: number; markers: number }>('SELECT COUNT(*) AS versions, COALESCE(SUM(delete_marker), 0) AS markers FROM versions')
    .one();
  const multipartBytes = partBytes(sql);
  const bytes = ledger.get('bytes') ?? 0;
  const objects = ledger.get('objects') ?? 0;
  return {
    bytes,
    objects,
    versions: versions.versions,
    deleteMarkers: versions.markers,
    currentObjects: sql.exec<{ n: number }>('SELECT COUNT(*) AS n FROM objects').one().n,
    storedBytes: Object.values(backends).reduce((a, b) => a + b, 0),
    inlineBytes: ledger.get('inline-bytes') ?? 0,
    uploads: sql.exec<{ n: number }>('SELECT COUNT(*) AS n FROM uploads').one().n,
    multipartBytes,
    backends,
    quota: readQuota(sql),
    ...(low === null ? {} : { partitions: [{ low, bytes: bytes + multipartBytes, objects }] }),
  };
}

/** What bucketHealth adds of the quota (catalog/types.ts BucketHealth): versions, delete markers, parts in flight, and the quota with what it counts. */
export function healthUsage(sql: SqlStorage): Pick<BucketHealth, 'versions' | 'deleteMarkers' | 'multipartBytes' | 'quota'> {
  const v = sql.exec<{ versions: number; markers: number }>('SELECT COUNT(*) AS versions, COALESCE(SUM(delete_marker), 0) AS markers FROM versions').one();
  const quota = readQuota(sql);
  const used = quotaFigures(sql);
  return {
    versions: v.versions,
    deleteMarkers: v.markers,
    multipartBytes: used.bytes - ledgerValue(sql, 'bytes'),
    ...(quota ? { quota: { bytes: quota.bytes, objects: quota.objects, usedBytes: used.bytes, usedObjects: used.objects } } : {}),
  };
}
