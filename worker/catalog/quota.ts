/**
 * Bucket quotas (issue 45; docs/QUOTAS.md): a limit on the bytes and on the objects a bucket
 * holds, counted over every version (delete markers hold nothing: neither bytes nor objects) and
 * over the parts of multipart uploads in flight (bytes). The rules only; the catalog reads the
 * figures and applies them inside the write's own call (sql-quota.ts).
 *
 * A write is refused when it GROWS a figure past its limit: a write that leaves a figure as it is
 * or lowers it (an overwrite by a smaller body in an unversioned bucket, a completion, whose
 * parts were counted already) passes even in a bucket over its quota, and deletes always pass,
 * so a quota lowered below the usage stops growth and lets the owner clean up.
 *
 * A split bucket (docs/PARTITIONS.md): each partition counts only what it holds, so the quota is
 * cut into shares when it is set: each partition may hold its usage at that moment plus an equal
 * part of the headroom left (`shares`, by the low key of each partition's range). The sum of the
 * shares is the quota, so a split bucket never holds more than its quota; the cost is that one
 * partition may refuse while another still has room, until the shares are cut again (setting the
 * quota again, `shardgate quota BUCKET --rebalance`).
 */
import { S3Error } from '../model/errors.ts';

/** A bucket's limits (null: that figure is not limited). */
export interface BucketQuota {
  bytes: number | null;
  objects: number | null;
}

/** What a partition may hold of each figure when the bucket is split (absent: the quota itself). */
export interface QuotaShare {
  bytes: number | null;
  objects: number | null;
}

/** The stored row (state 'quota', copied to every partition: partition-mirror.ts). */
export interface StoredQuota extends BucketQuota {
  /** Split buckets only: each partition's share, by the low key of its range ('' for the root). */
  shares?: Record<string, QuotaShare>;
  /** When the quota (or its shares) was set (ms). */
  setAt: number;
}

/** The figures a quota limits, as one instance counts them. */
export interface QuotaFigures {
  bytes: number;
  objects: number;
}

/**
 * One instance's usage in detail (the `bucketUsage` verb; summed over a split bucket's partitions
 * by sumUsage): every figure counted over every version.
 */
export interface BucketUsage {
  /** Logical bytes of every stored version (delete markers: 0). */
  bytes: number;
  /** Versions holding data (a bucket never versioned: one per key). */
  objects: number;
  /** Every version row, delete markers included. */
  versions: number;
  deleteMarkers: number;
  /** Keys with a current version that is not a delete marker (what ListObjects shows). */
  currentObjects: number;
  /** Bytes of shard files on the backends, all backends together (inline objects: 0). */
  storedBytes: number;
  /** Bytes kept inline in the catalog (small objects: no shard files). */
  inlineBytes: number;
  /** Multipart uploads in flight and the bytes of their parts stored so far. */
  uploads: number;
  multipartBytes: number;
  /** Per backend: shard files' bytes. */
  backends: Record<string, number>;
  /** The quota (null: none). */
  quota: StoredQuota | null;
  /** Split buckets: each partition's own figures, by the low key of its range. */
  partitions?: { low: string; bytes: number; objects: number }[];
}

export const QUOTA_ROW = 'quota';

/** Largest limit accepted (2^53-1 bytes: JSON-safe integers). */
const MAX_LIMIT = Number.MAX_SAFE_INTEGER;

/** A quota as an admin request gives it, checked: non-negative integers or null. */
export function checkedQuota(q: { bytes?: unknown; objects?: unknown }): BucketQuota {
  const one = (name: string, v: unknown): number | null => {
    if (v === undefined || v === null) return null;
    const n = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v;
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0 || n > MAX_LIMIT)
      throw new S3Error('InvalidArgument', `quota: ${name} is a whole number from 0 to ${MAX_LIMIT}`, { ArgumentName: name });
    return n;
  };
  return { bytes: one('bytes', q.bytes), objects: one('objects', q.objects) };
}

export function parseStoredQuota(row: string | null): StoredQuota | null {
  if (row === null) return null;
  const q = JSON.parse(row) as StoredQuota;
  return q.bytes === null && q.objects === null ? null : q;
}

/**
 * The shares of a split bucket's partitions: each its usage now plus an equal part of the
 * headroom (the first partitions take the remainder), never below its usage; a figure not
 * limited stays null. The shares add up to the quota when the bucket is within it.
 */
export function quotaShares(quota: BucketQuota, parts: { low: string; bytes: number; objects: number }[]): Record<string, QuotaShare> {
  const cut = (limit: number | null, used: number[]): (number | null)[] => {
    if (limit === null) return used.map(() => null);
    const headroom = Math.max(0, limit - used.reduce((a, b) => a + b, 0));
    const each = Math.floor(headroom / used.length);
    const extra = headroom - each * used.length;
    return used.map((u, i) => u + each + (i < extra ? 1 : 0));
  };
  const bytes = cut(
    quota.bytes,
    parts.map((p) => p.bytes),
  );
  const objects = cut(
    quota.objects,
    parts.map((p) => p.objects),
  );
  return Object.fromEntries(parts.map((p, i) => [p.low, { bytes: bytes[i]!, objects: objects[i]! }]));
}

/** The limits one instance enforces: its share in a split bucket, else the quota. */
export function limitsFor(quota: StoredQuota, low: string | null): QuotaShare {
  // A range the shares do not know (while they are being cut: quota-set.ts; or a partition made
  // after): no growth of a limited figure until they are cut again.
  if (low !== null && quota.shares) return quota.shares[low] ?? { bytes: quota.bytes === null ? null : 0, objects: quota.objects === null ? null : 0 };
  return { bytes: quota.bytes, objects: quota.objects };
}

/**
 * Refuses (QuotaExceeded, before anything is stored when called from a write's first call) a
 * write that would grow a limited figure past its limit; `grow` is the change the write makes.
 */
export function checkQuota(bucket: string, limits: QuotaShare, used: QuotaFigures, grow: QuotaFigures, split: boolean): void {
  for (const figure of ['bytes', 'objects'] as const) {
    const limit = limits[figure];
    if (limit === null || grow[figure] <= 0 || used[figure] + grow[figure] <= limit) continue;
    const where = split
      ? " (this bucket is split: the limit is this key range's share of the quota; an admin's 'shardgate quota --rebalance' cuts the shares again)"
      : '';
    throw new S3Error(
      'QuotaExceeded',
      `The bucket quota of ${limit} ${figure} would be exceeded: the bucket holds ${used[figure]} and this write adds ${grow[figure]}${where}.`,
      { BucketName: bucket, QuotaType: figure, Quota: String(limit), Used: String(used[figure]), Requested: String(grow[figure]) },
    );
  }
}

/** A split bucket's usage from its partitions' (the root's first): figures add, the quota is the root's. */
export function sumUsage([root, ...rest]: [BucketUsage, ...BucketUsage[]]): BucketUsage {
  const out: BucketUsage = { ...root, backends: { ...root.backends }, partitions: [...(root.partitions ?? [])] };
  for (const u of rest) {
    for (const k of ['bytes', 'objects', 'versions', 'deleteMarkers', 'currentObjects', 'storedBytes', 'inlineBytes', 'uploads', 'multipartBytes'] as const)
      out[k] += u[k];
    for (const [b, n] of Object.entries(u.backends)) out.backends[b] = (out.backends[b] ?? 0) + n;
    out.partitions!.push(...(u.partitions ?? []));
  }
  if (rest.length === 0) delete out.partitions;
  return out;
}
