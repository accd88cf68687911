/**
 * The admin API's quota and usage routes (issue 45; docs/QUOTAS.md), mounted by admin.ts (POST,
 * signed by a key with the admin action, as every admin route):
 *   quota?bucket=NAME                     the bucket's quota and usage
 *   quota?bucket=NAME&bytes=N&objects=M   sets the limits given (a figure not given keeps its
 *                                         limit; `none` removes that one); answers as above
 *   quota?bucket=NAME&clear=1             removes the quota
 *   quota?bucket=NAME&rebalance=1         a split bucket's shares cut again from its usage now
 *   usage[?bucket=NAME]                   usage of one bucket, or of every bucket
 * A change is stored in the bucket's catalog before the answer (and copied to its partitions), and
 * every write checks it inside its own first catalog call: the next write, in any isolate, obeys it.
 */
import { bucketOwner } from '../model/account.ts';
import type { Hono } from 'hono';
import type { Catalog } from '../catalog/ports.ts';
import { checkedQuota, type BucketQuota } from '../catalog/quota.ts';
import { rebalanceQuota, setQuota } from '../catalog/quota-set.ts';
import { isValidBucketName } from '../model/bucket-name.ts';
import { S3Error } from '../model/errors.ts';
import type { AppEnv } from '../s3/context.ts';
import type { BackendPrices } from '../engine/index.ts';
import type { TrafficSource } from '../upkeep/cost.ts';
import { bucketUsageReport, type BucketUsageReport } from '../upkeep/bucket-usage.ts';
import type { RestripePolicy } from '../catalog/restripe-record.ts';
import { requestView } from '../model/request.ts';
import type { Authenticate } from '../s3/context.ts';
import type { Context } from 'hono';

export interface QuotaRouteDeps {
  catalog: Catalog;
  /** Prices and the traffic counted (absent: the report has no cost and no traffic). */
  costs?: { traffic: TrafficSource; prices: Record<string, BackendPrices | null> };
  /** The storage policy the config gives a bucket (absent: the report names none). */
  policyOf?: (bucket: string) => RestripePolicy;
}

function bucketParam(q: URLSearchParams, route: string): string {
  const bucket = q.get('bucket');
  if (!bucket) throw new S3Error('InvalidArgument', `${route} needs ?bucket=NAME`);
  if (!isValidBucketName(bucket)) throw new S3Error('InvalidBucketName', undefined, { BucketName: bucket });
  return bucket;
}

/** Every bucket's usage report, or the one named (NoSuchBucket). */
export async function usageReports(deps: QuotaRouteDeps, bucket?: string): Promise<BucketUsageReport[]> {
  const names = bucket !== undefined ? [bucket] : (await deps.catalog.listBucketRecords()).map((b) => b.name);
  const traffic = deps.costs ? await deps.costs.traffic() : null;
  const out: BucketUsageReport[] = [];
  for (const name of names) {
    try {
      const report = bucketUsageReport(name, await deps.catalog.bucketUsage(name), deps.costs?.prices ?? {}, traffic);
      // The bucket's storage policy and its data's redundancy (units by shards left), as the status shows them.
      const health = await deps.catalog.bucketHealth(name, new Date());
      out.push({ ...report, policy: deps.policyOf?.(name) ?? null, redundancy: health.redundancy.byPolicy });
    } catch (err) {
      // A bucket deleted between the listing and its turn is left out; one named is NoSuchBucket.
      if (bucket !== undefined || !(err instanceof S3Error && err.code === 'NoSuchBucket')) throw err;
    }
  }
  return out;
}

export function quotaRoutes(admin: Hono<AppEnv>, deps: QuotaRouteDeps): void {
  admin.post('/quota', async (c) => {
    const q = c.var.view.query;
    const bucket = bucketParam(q, 'quota');
    const change = (['bytes', 'objects'] as const).filter((f) => q.has(f));
    if (q.get('clear') === '1') {
      if (change.length) throw new S3Error('InvalidArgument', 'quota: clear=1 takes no bytes or objects');
      await setQuota(deps.catalog, bucket, null, Date.now());
    } else if (change.length) {
      const now = await deps.catalog.getBucketQuota(bucket);
      const next: Record<string, unknown> = { bytes: now?.bytes ?? null, objects: now?.objects ?? null };
      for (const f of change) next[f] = q.get(f) === 'none' ? null : q.get(f);
      const quota: BucketQuota = checkedQuota(next);
      await setQuota(deps.catalog, bucket, quota, Date.now());
    } else if (q.get('rebalance') === '1') {
      await rebalanceQuota(deps.catalog, bucket, Date.now());
    }
    return c.json((await usageReports(deps, bucket))[0]);
  });

  admin.post('/usage', async (c) => {
    const bucket = c.var.view.query.has('bucket') ? bucketParam(c.var.view.query, 'usage') : undefined;
    return c.json({ buckets: await usageReports(deps, bucket) });
  });
}

/** What a key that is not an admin's reads of a bucket's usage (no backends, traffic, prices or shares). */
export interface ReadOnlyUsage {
  bucket: string;
  bytes: number;
  objects: number;
  versions: number;
  deleteMarkers: number;
  currentObjects: number;
  uploads: number;
  multipartBytes: number;
  quota: { bytes: number | null; objects: number | null } | null;
  quotaUsed: { bytes: number; objects: number };
}

/**
 * The console's `GET /_shardgate/console/usage?bucket=NAME` (console.ts): a bucket's usage and
 * quota, read-only, for a key signed with a SigV4 Authorization header whose scope has the list
 * action on the whole bucket (it could count all of it by listing its versions and uploads
 * anyway). A key scoped to prefixes is refused (the figures are the whole bucket's), and so is
 * every key but an admin's when the bucket has a policy (its statements are evaluated by the S3
 * gate for S3 operations, and this is none, so the route does not guess what they would say) or
 * belongs to another account than the key's (model/account.ts).
 */
export function consoleUsageRoute(deps: { authenticate: Authenticate; catalog: Pick<Catalog, 'bucketUsage' | 'getBucketSettings'> }) {
  return async (c: Context<AppEnv>) => {
    const request = c.req.raw;
    if (!/^AWS4-HMAC-SHA256 /.test(request.headers.get('authorization') ?? ''))
      throw new S3Error('AccessDenied', 'usage answers a request signed with a SigV4 Authorization header');
    const view = requestView(request);
    const auth = await deps.authenticate(request, view);
    if (!auth.accessKeyId || !auth.access || auth.signature !== 'sigv4-header') throw new S3Error('AccessDenied', 'usage needs a signed request');
    const bucket = bucketParam(view.query, 'usage');
    if (!auth.access.allowsBucket('list', bucket))
      throw new S3Error('AccessDenied', "a bucket's usage is shown to keys that may list the whole bucket (or to admin keys, in the admin API)");
    if (!auth.access.admin) {
      const settings = await deps.catalog.getBucketSettings(bucket);
      // Another account's bucket (model/account.ts): only its policy could let the key in, and this route does not evaluate one.
      if (bucketOwner(settings.rows.owner) !== auth.access.account) throw new S3Error('AccessDenied', "another account's bucket: its usage is not shown");
      if (settings.rows.policy !== null) throw new S3Error('AccessDenied', 'this bucket has a bucket policy: its usage is shown to admin keys only');
    }
    const u = await deps.catalog.bucketUsage(bucket);
    const out: ReadOnlyUsage = {
      bucket,
      bytes: u.bytes,
      objects: u.objects,
      versions: u.versions,
      deleteMarkers: u.deleteMarkers,
      currentObjects: u.currentObjects,
      uploads: u.uploads,
      multipartBytes: u.multipartBytes,
      quota: u.quota && { bytes: u.quota.bytes, objects: u.quota.objects },
      quotaUsed: { bytes: u.bytes + u.multipartBytes, objects: u.objects },
    };
    return c.json(out, 200, { 'cache-control': 'no-store' });
  };
}
