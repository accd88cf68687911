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
 * Who may read them: the figures are the whole bucket's, noncurrent versions included, so a key
 * needs list on the whole bucket (HeadBucket alone needs it on some part: a key scoped to prefixes
 * is refused the stats, AccessDenied, not HeadBucket), as it could count all of it by listing
 * versions anyway; and when the bucket has a policy, an admin key: the gate evaluated the request
 * as HeadBucket's s3:ListBucket, and counting would not honour a Deny of s3:ListBucketVersions
 * (the console's usage route, app/quota-routes.ts, keeps the same rule). Anonymous: refused.
 */
import type { BucketStats } from '../model/object-store.ts';
import { S3Error } from '../model/errors.ts';
import type { S3Context } from './context.ts';

/** Whether the request asks for RGW's read-stats. */
export const wantsReadStats = (query: URLSearchParams) => query.get('read-stats')?.toLowerCase() === 'true';

/** AccessDenied unless the request's key may read the whole bucket's figures (above). */
export function assertMayReadStats(s3: S3Context): void {
  const access = s3.auth.access;
  const bucket = s3.bucket!;
  if (!access?.allowsBucket('list', bucket)) throw new S3Error('AccessDenied', 'read-stats answers keys that may list the whole bucket');
  if (!access.admin && s3.config.bucketSettings(bucket).rows.policy !== null)
    throw new S3Error('AccessDenied', 'this bucket has a bucket policy: read-stats answers admin keys only');
}

/** The X-RGW-* headers of a bucket's stats. */
export function readStatsHeaders(stats: BucketStats): Record<string, string> {
  return {
    'X-RGW-Object-Count': String(stats.objects),
    'X-RGW-Bytes-Used': String(stats.bytes),
    'X-RGW-Quota-Bucket-Size': String(stats.quota?.bytes ?? -1),
    'X-RGW-Quota-Bucket-Objects': String(stats.quota?.objects ?? -1),
  };
}
