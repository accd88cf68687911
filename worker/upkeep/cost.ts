/**
 * The cost report (issue 14): what each backend and each bucket costs, from what is stored
 * (stored-bytes.ts), the traffic counted (a TrafficSource: the gateway reads the shared ops
 * record, every isolate's counts of backend calls: worker/ops/counters.ts trafficByBucket) and
 * each backend's prices. Pure: no I/O.
 *
 * - Storage: bytes held now x the price per GB-month = what a month at this size costs.
 * - Requests: PUT-class (puts, lists) and GET-class (gets, heads) counts x the price per 1000;
 *   deletes are free on every provider priced here.
 * - Egress: bytes read out x the price per GB.
 * Traffic is what was counted since `since`, not a projection: the report says which window.
 * A bucket's share of a backend's cost is its own bytes and requests at that backend's prices;
 * traffic over all buckets (listings of `sg1/`) stays with the backend only.
 * Unpriced backends report their usage with cost null, and do not count in the totals.
 * Upkeep jobs (the fleet mover, the re-stripe, the lifecycle's transitions) get lines of their own: what part of the backend
 * and bucket lines they made (see CostReport `jobs`).
 */
import type { JobTraffic, TrafficCounts, UpkeepJob } from '../../backends/metered.ts';
import type { ClientTraffic } from '../ops/types.ts';
import { type BackendPrices, BYTES_PER_GB } from '../engine/index.ts';

export type { JobTraffic, TrafficCounts, UpkeepJob };
import type { StoredBytes } from './stored-bytes.ts';

/**
 * Where the traffic counts come from, and since when they were counted; `jobs`: the part of
 * `counts` each upkeep job made (absent: none counted apart).
 */
export type TrafficSource = () => Promise<{ since: Date; counts: TrafficCounts[]; jobs?: JobTraffic[]; clients?: Record<string, ClientTraffic> }>;

export interface Usage {
  storedBytes: number;
  shards: number;
  putRequests: number;
  getRequests: number;
  deleteRequests: number;
  bytesIn: number;
  bytesOut: number;
}

export interface Money {
  /** A month at the current size. */
  storagePerMonth: number;
  egress: number;
  requests: number;
  /** storagePerMonth + egress + requests. */
  total: number;
}

export interface CostLine {
  usage: Usage;
  /** Null: unpriced. */
  cost: Money | null;
}

export interface CostReport {
  /** The window of the traffic figures: since this time, until the report. */
  trafficSince: string;
  generatedAt: string;
  backends: (CostLine & { id: string; domain: string; prices: (BackendPrices & { source?: string }) | null })[];
  buckets: (CostLine & { bucket: string; byBackend: Record<string, CostLine> })[];
  /**
   * What the upkeep jobs asked of the backends since `trafficSince`, per job and per backend, at
   * the same prices: the fleet mover's (`move`: drains and rebalances) GETs of the shards it
   * copies or rebuilds from, PUTs of the new copies and their egress, and the re-stripe's
   * (`restripe`) and the lifecycle transitions' rewrites (`transition`). These lines are INCLUDED in the backend and bucket lines above: they say
   * what part of them the job made, to compare with a drain estimate; do not add them to the
   * total. Storage is not theirs (storedBytes and shards 0). A drain's DELETEs of the old copies
   * are not the mover's: the collector deletes them after the grace period, counted per backend
   * and bucket only (the estimate's DELETEs come back there, not here); the mover's own DELETEs
   * are of new copies that lost a race with a client's write (move.ts).
   */
  jobs: (CostLine & { job: UpkeepJob; byBackend: Record<string, CostLine> })[];
  /** Over priced backends only. */
  total: Money;
}

export interface CostInput {
  backends: { id: string; domain: string }[];
  prices: Record<string, (BackendPrices & { source?: string }) | null>;
  stored: StoredBytes[];
  traffic: TrafficCounts[];
  /** The part of `traffic` each upkeep job made (absent: no job lines). */
  jobs?: JobTraffic[];
  trafficSince: Date;
  now: Date;
}

export function costReport(input: CostInput): CostReport {
  const backendUsage = new Map<string, Usage>(input.backends.map((b) => [b.id, emptyUsage()]));
  const bucketUsage = new Map<string, Map<string, Usage>>();
  const forBucket = (bucket: string, backendId: string) => usageIn(bucketUsage, bucket, backendId);
  for (const s of input.stored) {
    for (const u of [backendUsage.get(s.backendId), forBucket(s.bucket, s.backendId)]) {
      if (!u) continue;
      u.storedBytes += s.bytes;
      u.shards += s.shards;
    }
  }
  for (const t of input.traffic) {
    const targets = [backendUsage.get(t.backendId), t.bucket === null ? undefined : forBucket(t.bucket, t.backendId)];
    for (const u of targets) if (u) addCalls(u, t);
  }
  const jobUsage = new Map<UpkeepJob, Map<string, Usage>>();
  for (const t of input.jobs ?? []) addCalls(usageIn(jobUsage, t.job, t.backendId), t);
  const priceOf = (id: string) => input.prices[id] ?? null;
  const backends = input.backends.map((b) => {
    const usage = backendUsage.get(b.id)!;
    return { id: b.id, domain: b.domain, prices: priceOf(b.id), usage, cost: money(usage, priceOf(b.id)) };
  });
  const split = (per: Map<string, Usage>) => {
    const byBackend: Record<string, CostLine> = {};
    for (const [id, usage] of per) byBackend[id] = { usage, cost: money(usage, priceOf(id)) };
    const lines = Object.values(byBackend);
    return { byBackend, usage: sumUsage(lines.map((l) => l.usage)), cost: sumMoney(lines.map((l) => l.cost)) };
  };
  const buckets = [...bucketUsage].sort(([a], [b]) => (a < b ? -1 : 1)).map(([bucket, per]) => ({ bucket, ...split(per) }));
  const jobs = [...jobUsage].sort(([a], [b]) => (a < b ? -1 : 1)).map(([job, per]) => ({ job, ...split(per) }));
  return {
    trafficSince: input.trafficSince.toISOString(),
    generatedAt: input.now.toISOString(),
    backends,
    buckets,
    jobs,
    total: sumMoney(backends.map((b) => b.cost)) ?? zero(),
  };
}

/** What `usage` costs at `p`; null when unpriced. */
export function money(usage: Usage, p: BackendPrices | null): Money | null {
  if (!p) return null;
  const storagePerMonth = (usage.storedBytes / BYTES_PER_GB) * p.storagePerGBMonth;
  const egress = (usage.bytesOut / BYTES_PER_GB) * p.egressPerGB;
  const requests = (usage.putRequests * p.putPer1000 + usage.getRequests * p.getPer1000) / 1000;
  return { storagePerMonth, egress, requests, total: storagePerMonth + egress + requests };
}

/** Calls into a usage: PUT-class (puts, lists), GET-class (gets, heads), deletes, bytes. */
function addCalls(u: Usage, t: Omit<TrafficCounts, 'backendId' | 'bucket'>): void {
  u.putRequests += t.puts + t.lists;
  u.getRequests += t.gets + t.heads;
  u.deleteRequests += t.deletes;
  u.bytesIn += t.bytesIn;
  u.bytesOut += t.bytesOut;
}

/** `outer`'s usage for `key` at `backendId`, created empty the first time. */
function usageIn<K>(outer: Map<K, Map<string, Usage>>, key: K, backendId: string): Usage {
  let m = outer.get(key);
  if (!m) outer.set(key, (m = new Map()));
  let u = m.get(backendId);
  if (!u) m.set(backendId, (u = emptyUsage()));
  return u;
}

export function emptyUsage(): Usage {
  return { storedBytes: 0, shards: 0, putRequests: 0, getRequests: 0, deleteRequests: 0, bytesIn: 0, bytesOut: 0 };
}

function zero(): Money {
  return { storagePerMonth: 0, egress: 0, requests: 0, total: 0 };
}

function sumUsage(all: Usage[]): Usage {
  const out = emptyUsage();
  for (const u of all) for (const k of Object.keys(out) as (keyof Usage)[]) out[k] += u[k];
  return out;
}

/** Sum over the priced lines; null when none is priced. */
function sumMoney(all: (Money | null)[]): Money | null {
  const priced = all.filter((m): m is Money => m !== null);
  if (!priced.length) return null;
  const out = zero();
  for (const m of priced) for (const k of Object.keys(out) as (keyof Money)[]) out[k] += m[k];
  return out;
}
