/**
 * A bucket's usage report (issue 45): the catalog's counts (catalog/quota.ts BucketUsage: bytes
 * over every version, objects, versions, delete markers, multipart bytes in flight, shard bytes
 * per backend), the quota and how much of it is used, the backend traffic counted for the bucket
 * (requests and egress the gateway made of the backends for it, since the shared ops record
 * began: the same counts as the cost report's), and an estimated monthly cost: a month at the
 * bytes stored now at each backend's storage price, plus the traffic counted so far at its
 * prices. Pure: no I/O.
 * And the clients' own requests naming the bucket with their bytes in and out (egress to clients),
 * counted by the gateway's meter per bucket since the same moment (not priced: a Worker's
 * responses cost no egress on Cloudflare).
 */
import type { BucketUsage } from '../catalog/quota.ts';
import type { RestripePolicy } from '../catalog/restripe-record.ts';
import type { PolicyRedundancy } from '../catalog/redundancy.ts';
import type { ClientTraffic } from '../ops/types.ts';
import { emptyUsage, money, type Money, type TrafficCounts, type Usage } from './cost.ts';
import type { BackendPrices } from '../engine/index.ts';

export interface BucketUsageReport extends BucketUsage {
  bucket: string;
  /** What the quota counts: bytes of every version plus parts in flight; versions holding data. */
  quotaUsed: { bytes: number; objects: number };
  /** The share of each limit used (null: not limited), 0..1 (above 1: over the quota). */
  quotaRatio: { bytes: number | null; objects: number | null };
  /**
   * The clients' S3 requests naming the bucket and their body bytes, in (uploads) and out (egress
   * to clients), since the same moment (null: not counted in this gateway).
   */
  clientTraffic: { since: string; requests: number; bytesIn: number; egressBytes: number } | null;
  /** Backend calls and bytes counted for the bucket since `trafficSince` (null: not counted in this gateway). */
  traffic: { since: string; requests: number; putRequests: number; getRequests: number; deleteRequests: number; bytesIn: number; egressBytes: number } | null;
  /** At the configured prices; null when no backend holding the bucket is priced. */
  cost: (Money & { unpricedBackends: string[] }) | null;
  /**
   * A split bucket (docs/QUOTAS.md, shares): some partition has used 90% of its share of a figure
   * while the bucket has used less than 90% of the quota, so writes there will be refused early:
   * `shardgate quota BUCKET --rebalance` cuts the shares again.
   */
  rebalanceAdvised: boolean;
  /** The storage policy the config gives the bucket, and its data's units by shards left per k+m (the admin route adds them). */
  policy?: RestripePolicy | null;
  redundancy?: Record<string, PolicyRedundancy>;
}

/** Whether a split bucket's shares are worth cutting again (see BucketUsageReport.rebalanceAdvised). */
export function rebalanceAdvised(usage: BucketUsage): boolean {
  const q = usage.quota;
  if (!q?.shares || !usage.partitions) return false;
  const used = { bytes: usage.bytes + usage.multipartBytes, objects: usage.objects };
  return (['bytes', 'objects'] as const).some((f) => {
    const limit = q[f];
    if (limit === null || used[f] >= 0.9 * limit) return false;
    return usage.partitions!.some((p) => {
      const share = q.shares?.[p.low]?.[f];
      return share !== null && share !== undefined && p[f] >= 0.9 * share;
    });
  });
}

export function bucketUsageReport(
  bucket: string,
  usage: BucketUsage,
  prices: Record<string, BackendPrices | null>,
  traffic: { since: Date; counts: TrafficCounts[]; clients?: Record<string, ClientTraffic> } | null,
): BucketUsageReport {
  const quotaUsed = { bytes: usage.bytes + usage.multipartBytes, objects: usage.objects };
  const ratio = (limit: number | null | undefined, used: number) =>
    limit === null || limit === undefined ? null : limit === 0 ? (used > 0 ? Infinity : 0) : used / limit;
  const perBackend = new Map<string, Usage>();
  const at = (id: string) => perBackend.get(id) ?? (perBackend.set(id, emptyUsage()), perBackend.get(id)!);
  for (const [id, bytes] of Object.entries(usage.backends)) at(id).storedBytes += bytes;
  const lines = traffic?.counts.filter((t) => t.bucket === bucket) ?? [];
  for (const t of lines) {
    const u = at(t.backendId);
    u.putRequests += t.puts + t.lists;
    u.getRequests += t.gets + t.heads;
    u.deleteRequests += t.deletes;
    u.bytesIn += t.bytesIn;
    u.bytesOut += t.bytesOut;
  }
  let cost: BucketUsageReport['cost'] = null;
  const unpriced: string[] = [];
  for (const [id, u] of perBackend) {
    const m = money(u, prices[id] ?? null);
    if (m === null) {
      unpriced.push(id);
      continue;
    }
    cost ??= { storagePerMonth: 0, egress: 0, requests: 0, total: 0, unpricedBackends: unpriced };
    cost.storagePerMonth += m.storagePerMonth;
    cost.egress += m.egress;
    cost.requests += m.requests;
    cost.total += m.total;
  }
  const all = [...perBackend.values()];
  const sum = (f: (u: Usage) => number) => all.reduce((n, u) => n + f(u), 0);
  return {
    bucket,
    ...usage,
    quotaUsed,
    quotaRatio: { bytes: ratio(usage.quota?.bytes, quotaUsed.bytes), objects: ratio(usage.quota?.objects, quotaUsed.objects) },
    traffic: traffic && {
      since: traffic.since.toISOString(),
      requests: sum((u) => u.putRequests + u.getRequests + u.deleteRequests),
      putRequests: sum((u) => u.putRequests),
      getRequests: sum((u) => u.getRequests),
      deleteRequests: sum((u) => u.deleteRequests),
      bytesIn: sum((u) => u.bytesIn),
      egressBytes: sum((u) => u.bytesOut),
    },
    clientTraffic: traffic && {
      since: traffic.since.toISOString(),
      requests: traffic.clients?.[bucket]?.requests ?? 0,
      bytesIn: traffic.clients?.[bucket]?.bytesIn ?? 0,
      egressBytes: traffic.clients?.[bucket]?.bytesOut ?? 0,
    },
    cost,
    rebalanceAdvised: rebalanceAdvised(usage),
  };
}
