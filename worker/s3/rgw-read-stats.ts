/**
 * Ceph RGW's usage extension of HeadBucket: `HEAD /<bucket>?read-stats=true` answers the bucket's
 * object count and bytes in X-RGW-* headers (RGW's own names), so tools written for RGW (and
 * ceph/s3-tests) read a bucket's size without listing it. AWS has no such parameter (it answers
 * HeadBucket's usual headers); any other value of it, or its absence, changes nothing.
 * The figures are the catalog's ledger (catalog/quota.ts, the counters bucket quotas check): every
 * version holding data, as RGW counts a versioned bucket's object instances; delete markers hold
 * nothing. The quota headers say the bucket's quota, -1 where a figure is not limited (RGW's
 * convention). Not sent: RGW's per-user quota and bucket limit (X-RGW-Quota-User-*,
 * X-RGW-Quota-Max-Buckets): shardgate has neither, and a number would claim a limit it does not keep.
 */
import type { BucketStats } from '../model/object-store.ts';

/** Whether the request asks for RGW's read-stats. */
export const wantsReadStats = (query: URLSearchParams) => query.get('read-stats')?.toLowerCase() === 'true';

/** The X-RGW-* headers of a bucket's stats. */
export function readStatsHeaders(stats: BucketStats): Record<string, string> {
  return {
    'X-RGW-Object-Count': String(stats.objects),
    'X-RGW-Bytes-Used': String(stats.bytes),
    'X-RGW-Quota-Bucket-Size': String(stats.quota?.bytes ?? -1),
    'X-RGW-Quota-Bucket-Objects': String(stats.quota?.objects ?? -1),
  };
}
