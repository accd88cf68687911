/**
 * Setting a bucket's quota through the catalog's ports (quota.ts has the rules): a bucket that
 * never split stores the quota as given; a split one first reads each partition's usage and stores
 * the quota with each partition's share of it (quotaShares), which its root copies to every
 * partition before it answers (partition-mirror.ts). Setting the same quota again cuts the shares
 * again from the usage as it is then (`shardgate quota BUCKET --rebalance`). A split bucket's
 * change is two steps (growth stopped, then the shares): see below.
 */
import { quotaShares, type BucketQuota, type BucketUsage, type StoredQuota } from './quota.ts';
import type { PartitionMap } from './partition-map.ts';

/**
 * The verbs this takes of the catalog. DurableCatalog, which calls rebalanceQuota after a static
 * split, answers them, so they cannot be named from ports.ts (a cycle): declared here, where they
 * are used, and checked there to be QuotaCatalog's and PartitionCatalog's.
 */
export interface QuotaSetter {
  getBucketQuota(bucket: string): Promise<StoredQuota | null>;
  setBucketQuota(bucket: string, quota: StoredQuota | null): Promise<void>;
  bucketUsage(bucket: string): Promise<BucketUsage>;
  getPartitionMap(bucket: string): Promise<PartitionMap>;
}

export async function setQuota(catalog: QuotaSetter, bucket: string, quota: BucketQuota | null, now: number): Promise<StoredQuota | null> {
  if (quota === null || (quota.bytes === null && quota.objects === null)) {
    await catalog.setBucketQuota(bucket, null);
    return null;
  }
  const map = await catalog.getPartitionMap(bucket);
  let stored: StoredQuota = { bytes: quota.bytes, objects: quota.objects, setAt: now };
  if (map.ranges.length > 1) {
    // First no partition may grow (an empty set of shares: every range's limit is what it holds),
    // copied to every partition before it answers; writes already past their first call are
    // refused at their commit. So the usage read next is final, and the shares cut from it add up
    // to the quota: a rebalance racing writes cannot let the bucket past its quota. The cost:
    // writes growing the bucket are refused for the moment between the two steps.
    await catalog.setBucketQuota(bucket, { ...stored, shares: {} });
    const usage = await catalog.bucketUsage(bucket);
    const parts = map.ranges.map((r) => usage.partitions?.find((p) => p.low === r.low) ?? { low: r.low, bytes: 0, objects: 0 });
    stored = { ...stored, shares: quotaShares(quota, parts) };
  }
  await catalog.setBucketQuota(bucket, stored);
  return stored;
}

/** The quota cut again from the usage now (split buckets); null when the bucket has none. */
export async function rebalanceQuota(catalog: QuotaSetter, bucket: string, now: number): Promise<StoredQuota | null> {
  const q = await catalog.getBucketQuota(bucket);
  return q === null ? null : await setQuota(catalog, bucket, { bytes: q.bytes, objects: q.objects }, now);
}
