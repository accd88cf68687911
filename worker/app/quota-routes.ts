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
import type { Hono } from 'hono';
import type { Catalog } from '../catalog/types.ts';
import { checkedQuota, type BucketQuota } from '../catalog/quota.ts';
import { rebalanceQuota, setQuota } from '../catalog/quota-set.ts';
import { isValidBucketName } from '../model/bucket-name.ts';
import { S3Error } from '../model/errors.ts';
import type { AppEnv } from '../s3/context.ts';
import type { BackendPrices } from '../engine/index.ts';
import type { TrafficSource } from '../upkeep/cost.ts';
import { bucketUsageReport, type BucketUsageReport } from '../upkeep/bucket-usage.ts';

export interface QuotaRouteDeps {
  catalog: Catalog;
  /** Prices and the traffic counted (absent: the report has no cost and no traffic). */
  costs?: { traffic: TrafficSource; prices: Record<string, BackendPrices | null> };
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
      out.push(bucketUsageReport(name, await deps.catalog.bucketUsage(name), deps.costs?.prices ?? {}, traffic));
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
