/**
 * The status document of `GET /_shardgate/status` (and what the page and the metrics are drawn
 * from): backends with their health, data health summed and per bucket, upkeep counters, and the
 * series of the last hours. Built from the shared record's snapshot and the catalog's bucket
 * health. An unsigned read (unless the config opens it) gets no bucket names, keys or error
 * messages: health, counts and totals only.
 */
import { quantile } from './histogram.ts';
import type { BudgetGauge } from '../model/budget-gauge.ts';
import type { BucketHealth, CatalogLoss, JournalStatus } from '../catalog/types.ts';
import { BUCKET_LIST_INSTANCE } from '../format/journal.ts';
import { bytesAtRiskAndLost, sumRedundancy, type PolicyRedundancy } from '../catalog/redundancy.ts';
import { sumClasses, type ClassUsage } from '../catalog/usage.ts';
import { restripeProgressOf, type BucketRestripeProgress, type RestripePolicy } from '../catalog/restripe-record.ts';
import { progressOf as adoptProgressOf, type BackfillProgress } from '../model/adopt-backfill.ts';
import type { PricedBackend } from '../model/prices.ts';
import type { SplitThresholds } from '../model/split-thresholds.ts';
import { backendHealth, HEALTH_WINDOW_MS, windowCounters, type BackendHealth } from './health.ts';
import {
  adoptCheck,
  catalogLossCheck,
  partitionCheck,
  fleetCheck,
  healthChecks,
  journalCheck,
  journalRedundancyCheck,
  worstOf,
  type CheckedPolicy,
  type FleetEntry,
  type HealthCheck,
  type JournalEntry,
  type LossCounts,
} from './checks.ts';
import { sampleOf, type DataHealth } from './data-health.ts';
import { activeRate } from './active-rate.ts';
import type { ClientTraffic, DataSample, MinuteRow, OpsCounters, OpsSnapshot } from './types.ts';

/** The replication the overhead is compared with: three full copies. */
export const REPLICATION_COPIES = 3;

const roundMs = (x: number | null) => (x === null ? null : Math.round(x * 10) / 10);

/**
 * Repair and scrub rates over their current run of activity in the health window (active-rate.ts:
 * from when the run began, not over the whole window), and the seconds `left` units take at them.
 */
export function upkeepRates(minutes: readonly MinuteRow[], now: number, repairLeft: number, scrubLeft: number): StatusDoc['upkeep']['rates'] {
  const secondsLeft = (left: number, perSecond: number) => (left === 0 ? 0 : perSecond > 0 ? Math.ceil(left / perSecond) : null);
  const perMinute = (perSecond: number) => Math.round(perSecond * 600) / 10;
  const repair = activeRate(minutes, 'repairs_done', now, HEALTH_WINDOW_MS),
    scrub = activeRate(minutes, 'scrub_units', now, HEALTH_WINDOW_MS);
  return {
    repairUnitsPerMinute: perMinute(repair.perSecond),
    repairSecondsLeft: secondsLeft(repairLeft, repair.perSecond),
    repairActiveSince: repair.since,
    scrubUnitsPerMinute: perMinute(scrub.perSecond),
    scrubSecondsLeft: secondsLeft(scrubLeft, scrub.perSecond),
    scrubActiveSince: scrub.since,
  };
}

export interface StatusConfig {
  backends: { id: string; domain: string; state?: FleetEntry['state']; maintenance?: boolean }[];
  policies: Record<string, CheckedPolicy>;
  defaultPolicy: string;
  coder: { kernel: string; crc32: string };
  scrubMode: string;
  /** The catalog partitions' split thresholds (config `partitions`); absent: no partitions check. */
  partitions?: SplitThresholds;
  /** Local development or deployed, and what the deployment review warned of (worker/config/deployment.ts). */
  deployment: { mode: 'local' | 'deployed'; warnings: string[] };
  /** The policy the config gives a bucket now (its re-stripe's target); absent: no re-stripe shown. */
  policyOf?: (bucket: string) => RestripePolicy;
  /** Each backend's storage price (US dollars per GB of 2^30 bytes a month; null: unpriced), for the buckets' estimated monthly cost. */
  storagePrices?: Record<string, number | null>;
  /** The buckets with a source (issue 41): the source (endpoint/bucket) and its prices; absent: no adoption shown. */
  adoptSources?: Record<string, { source: string; prices: PricedBackend | null; repassMs?: number }>;
}

export interface BucketStatus extends BucketHealth {
  storedBytes: number;
  scrubCoverage: number | null;
  /** The clients' S3 requests naming the bucket and their body bytes since the record began (`since`). */
  clientTraffic?: ClientTraffic;
  /** The bucket's re-stripe toward its policy now (catalog/restripe-record.ts), when it has one. */
  restripeProgress?: BucketRestripeProgress;
  /** The bucket's backfill from its source (model/adopt-backfill.ts), when it has a source. */
  adoptProgress?: BackfillProgress;
  /**
   * A month of the bucket's shard files at the size they have now, at each backend's storage price
   * (US dollars); null when none of its backends is priced. Traffic is in the admin API's usage
   * report (`shardgate quota`), which reads the shared record's counts.
   */
  monthlyStorageCost?: number | null;
}

/** A month of `b`'s shard files at `prices` (per GB of 2^30 bytes); null when no backend holding them is priced. */
export function monthlyStorageCost(b: Pick<BucketHealth, 'backends'>, prices: Record<string, number | null> | undefined): number | null {
  let total: number | null = null;
  for (const [id, x] of Object.entries(b.backends)) {
    const p = prices?.[id];
    if (p === null || p === undefined) continue;
    total = (total ?? 0) + (x.bytes / 1024 ** 3) * p;
  }
  return total;
}

/** One minute of traffic and upkeep, for the plots. */
export interface MinutePoint {
  at: number;
  s3Requests: number;
  s3Errors: number;
  s3BytesIn: number;
  s3BytesOut: number;
  backendBytesWritten: number;
  backendBytesRead: number;
  backendErrors: number;
  repairsDone: number;
  repairsFailed: number;
}

export interface StatusDoc {
  service: 'shardgate';
  /** The gateway's version (package.json, baked in at build). */
  version: string;
  now: number;
  /** When the shared record started counting. */
  since: number;
  signed: boolean;
  /** The worst of `checks`: 'critical' when some policy's writes are impossible (fewer backends reachable than its write quorum) or more backends are down than its m; 'warning': a backend down or degraded, or degraded objects. */
  health: 'ok' | 'warning' | 'critical';
  /** The checks `health` is the worst of (checks.ts), each with what to do. */
  checks: HealthCheck[];
  coder: StatusConfig['coder'];
  /** The warnings themselves only in a signed (or open) status: they name endpoints. */
  deployment: { mode: 'local' | 'deployed'; warningCount: number; warnings?: string[] };
  policies: StatusConfig['policies'];
  defaultPolicy: string;
  backends: BackendHealth[];
  data: {
    buckets: number;
    objects: number;
    bytes: number;
    inlineBytes: number;
    storedBytes: number;
    /** Stored bytes per byte of data on the backends; null when nothing is stored. */
    overhead: number | null;
    /**
     * Per storage class (issue 44): versions, their object bytes and their shard files' stored
     * bytes, summed over the buckets from their ledgers (catalog/usage.ts classesFromLedger: the
     * health read the status makes anyway, no call of its own).
     */
    classes: ClassUsage;
    replicationOverhead: number;
    degradedObjects: number;
    degradedUnits: number;
    /** Degraded units whose repair has failed 8 times or more (still retried): the dead letters. */
    repairStuck: number;
    missingShards: number;
    /**
     * Units with exactly k shards left (reads at risk) and fewer than k (lost), counting as missing
     * the shards recorded missing and those on a backend unreachable now (down, in maintenance or
     * retired: ops/unreachable.ts), and their object bytes; `byPolicy`: every unit and its bytes per policy
     * ("4+2") by shards left, whole ones too, summed over the buckets (catalog/redundancy.ts).
     */
    redundancy: {
      atRisk: number;
      lost: number;
      atRiskBytes: number;
      lostBytes: number;
      byMissing: Record<string, number>;
      byPolicy: Record<string, PolicyRedundancy>;
    };
    oldestDegradedAt: number | null;
    uploads: number;
    reservations: { held: number; expired: number };
    garbage: { queued: number; due: number };
    /**
     * In units: `checked` of the `units` stored now were checked whole in their bucket's current
     * pass (between passes: its last complete one); `oldestUnchecked`: the unit that has gone
     * longest without a check, and since when (its last check, or its write).
     */
    scrub: {
      mode: string;
      checked: number;
      units: number;
      coverage: number | null;
      /** Which unit (bucket, key, unit id) only in a signed (or open) status: it names them. */
      oldestUnchecked: { bucket?: string; key?: string; unitId?: string; since: number } | null;
      oldestPassCompletedAt: number | null;
      passes: number;
    };
    /**
     * The lifecycle job over the buckets it has run in (upkeep/lifecycle.ts): `buckets` with a
     * pass in progress or done, the oldest of their last complete passes (null while any has none),
     * and what the last complete passes did.
     */
    lifecycle: {
      buckets: number;
      inProgress: number;
      oldestPassCompletedAt: number | null;
      lastRunAt: number | null;
      lastPasses: {
        examined: number;
        expired: number;
        noncurrentDeleted: number;
        markersRemoved: number;
        uploadsAborted: number;
        transitioned: number;
        transitionedBytes: number;
        failed: number;
      };
    };
    /**
     * The re-stripe over the buckets whose stored versions are not all as their policy says
     * (`buckets`: those not done): units and bytes left, versions and bytes rewritten, the sum of
     * their rates, and the longest time remaining among them (null: some has no rate yet).
     */
    /**
     * The adopted buckets' backfill (issue 41; absent: no bucket has a source): buckets with a
     * source and those whose move is complete, objects and bytes the backfill adopted, its source
     * egress and that egress's price (null: some source unpriced), the rates summed, and the
     * longest time left (null: some has no rate or no known total yet).
     */
    adopt?: {
      buckets: number;
      complete: number;
      detached: number;
      adoptedObjects: number;
      adoptedBytes: number;
      egressBytes: number;
      egressCost: number | null;
      bytesPerSecond: number | null;
      secondsRemaining: number | null;
    };
    restripe: {
      buckets: number;
      leftUnits: number;
      leftBytes: number;
      rewrittenVersions: number;
      rewrittenBytes: number;
      bytesPerSecond: number | null;
      secondsRemaining: number | null;
    };
    /**
     * The catalog journal's segment files summed over every instance (sql-journal.ts
     * journalRedundancy): units, those with exactly k shards recorded present (`atRisk`) and
     * fewer (`lost`), units by code ("4+2"; a narrower one was written while backends were down
     * and is re-striped by the journal's upkeep), and shard files on draining or retired backends.
     */
    journal: { files: number; units: number; atRisk: number; lost: number; byCode: Record<string, number>; shardsOnLeavingBackends: number };
  };
  upkeep: {
    repairsQueued: number;
    repairsDone: number;
    repairsFailed: number;
    repairedShards: number;
    scrubRuns: number;
    scrubShards: number;
    scrubDamaged: number;
    collectorRuns: number;
    collectedUnits: number;
    lifecycleRuns: number;
    lifecycleExpired: number;
    lifecycleNoncurrentDeleted: number;
    lifecycleMarkersRemoved: number;
    lifecycleUploadsAborted: number;
    lifecycleFailed: number;
    /** Versions moved to another storage class, their bytes, and those that could not be (SSE-C, retention). */
    lifecycleTransitioned: number;
    lifecycleTransitionedBytes: number;
    lifecycleTransitionsBlocked: number;
    /**
     * Rates over the current run of activity within the health window (the last 5 minutes; from
     * when the run began, `…ActiveSince`, to now: active-rate.ts) and the time left at that rate:
     * the repair backlog (degraded units) and the units the current scrub passes have yet to check.
     * Null time: work left and nothing done in the window (stalled, or not started yet).
     */
    rates: {
      repairUnitsPerMinute: number;
      repairSecondsLeft: number | null;
      repairActiveSince: number | null;
      scrubUnitsPerMinute: number;
      scrubSecondsLeft: number | null;
      scrubActiveSince: number | null;
    };
  };
  s3: {
    requests: number;
    errors: number;
    bytesIn: number;
    bytesOut: number;
    /** Per operation over the health window (the last 5 minutes): requests and ms to the response headers. */
    recent: Record<string, { requests: number; p50Ms: number | null; p99Ms: number | null }>;
  };
  /**
   * The isolate that answered (each isolate has its own): its coding budget, who holds it and who
   * waits. Idle, `heldBytes`, `holders` and `waiters` are 0; `reclaimed` counts leases a request
   * ended without giving back (each a bug, logged). Lease holders only in a signed status.
   */
  isolate: {
    /** When the answering isolate started serving, and for how long it has (seconds). */
    startedAt: number;
    uptimeSeconds: number;
    codingBudget: BudgetGauge;
  };
  /** Per bucket: only in a signed (or open) status. */
  buckets?: BucketStatus[];
  series: { from: number; stepMs: number; minutes: MinutePoint[]; samples: DataSample[] };
}

/** The re-stripe figures of the status, summed over the buckets' progress. */
export function restripeSummary(progress: BucketRestripeProgress[]): StatusDoc['data']['restripe'] {
  const busy = progress.filter((p) => !p.done);
  const rates = busy.map((p) => p.bytesPerSecond).filter((r): r is number => r !== null);
  const remaining = busy.map((p) => p.secondsRemaining);
  return {
    buckets: busy.length,
    leftUnits: progress.reduce((n, p) => n + p.left.units, 0),
    leftBytes: progress.reduce((n, p) => n + p.left.bytes, 0),
    rewrittenVersions: progress.reduce((n, p) => n + p.rewritten.versions, 0),
    rewrittenBytes: progress.reduce((n, p) => n + p.rewritten.bytes, 0),
    bytesPerSecond: rates.length ? rates.reduce((a, b) => a + b, 0) : null,
    secondsRemaining: busy.length && remaining.every((r) => r !== null) ? Math.max(...(remaining as number[])) : null,
  };
}

/** The backfill figures of the status, summed over the adopted buckets' progress. */
export function adoptSummary(progress: BackfillProgress[]): NonNullable<StatusDoc['data']['adopt']> {
  const busy = progress.filter((p) => p.phase === 'walking');
  const rates = busy.map((p) => p.bytesPerSecond).filter((r): r is number => r !== null);
  const remaining = busy.map((p) => p.secondsRemaining);
  return {
    buckets: progress.length,
    complete: progress.filter((p) => p.complete).length,
    detached: progress.filter((p) => p.phase === 'detached').length,
    adoptedObjects: progress.reduce((n, p) => n + p.totals.adopted, 0),
    adoptedBytes: progress.reduce((n, p) => n + p.totals.bytes, 0),
    egressBytes: progress.reduce((n, p) => n + p.egress.bytes, 0),
    egressCost: progress.every((p) => p.egress.cost !== null) ? progress.reduce((n, p) => n + p.egress.cost!, 0) : null,
    bytesPerSecond: rates.length ? rates.reduce((a, b) => a + b, 0) : null,
    secondsRemaining: busy.length && remaining.every((r) => r !== null) ? Math.max(...(remaining as number[])) : 0,
  };
}

/** The journal's segment files of every instance, summed (counts only). */
export function journalSummary(statuses: (JournalStatus | null)[], leaving: Set<string>): StatusDoc['data']['journal'] {
  const out: StatusDoc['data']['journal'] = { files: 0, units: 0, atRisk: 0, lost: 0, byCode: {}, shardsOnLeavingBackends: 0 };
  for (const s of statuses) {
    if (!s) continue;
    out.files += s.files;
    const r = s.redundancy;
    if (!r) continue;
    out.units += r.units;
    out.atRisk += r.atRisk;
    out.lost += r.lost;
    for (const [code, n] of Object.entries(r.byCode)) out.byCode[code] = (out.byCode[code] ?? 0) + n;
    for (const [id, n] of Object.entries(r.shardsByBackend)) if (leaving.has(id)) out.shardsOnLeavingBackends += n;
  }
  return out;
}

/** The journal's shard files per backend, over every instance. */
function journalShardsByBackend(statuses: (JournalStatus | null)[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of statuses) for (const [id, n] of Object.entries(s?.redundancy?.shardsByBackend ?? {})) out.set(id, (out.get(id) ?? 0) + n);
  return out;
}

/** The catalog-loss record counted (the status names no bucket). */
export function lossCounts(loss: CatalogLoss): LossCounts {
  const buckets = Object.entries(loss.lost)
    .filter(([i]) => i !== BUCKET_LIST_INSTANCE)
    .map(([, l]) => l);
  return {
    unknown: buckets.filter((l) => l.reason === 'unknown').length,
    behind: buckets.filter((l) => l.reason === 'behind').length,
    bucketList: BUCKET_LIST_INSTANCE in loss.lost,
    suspect: Object.keys(loss.suspect).length,
  };
}

/** The lifecycle figures of the status, summed over the buckets the job has run in. */
export function lifecycleSummary(buckets: Pick<BucketHealth, 'lifecycle'>[]): StatusDoc['data']['lifecycle'] {
  const ran = buckets.flatMap((b) => (b.lifecycle ? [b.lifecycle] : []));
  const lastPasses = { examined: 0, expired: 0, noncurrentDeleted: 0, markersRemoved: 0, uploadsAborted: 0, transitioned: 0, transitionedBytes: 0, failed: 0 };
  for (const p of ran) for (const k of Object.keys(lastPasses) as (keyof typeof lastPasses)[]) lastPasses[k] += p.last?.[k] ?? 0;
  return {
    buckets: ran.length,
    inProgress: ran.filter((p) => p.cursor !== null).length,
    oldestPassCompletedAt: ran.length && ran.every((p) => p.lastPassCompletedAt !== null) ? Math.min(...ran.map((p) => p.lastPassCompletedAt!)) : null,
    lastRunAt: ran.reduce<number | null>((t, p) => (p.lastRunAt !== null && (t === null || p.lastRunAt > t) ? p.lastRunAt : t), null),
    lastPasses,
  };
}

const storedOf = (b: BucketHealth) => Object.values(b.backends).reduce((n, x) => n + x.bytes, 0);
/** Units checked of units stored (null with none): counted per unit by the catalog, never estimated. */
const coverageOf = (b: BucketHealth) => (b.scrub.units ? b.scrub.checked / b.scrub.units : null);

function minutePoint(at: number, c: OpsCounters): MinutePoint {
  let s3Requests = 0,
    s3Errors = 0,
    written = 0,
    read = 0,
    backendErrors = 0;
  for (const [k, n] of Object.entries(c.s3)) {
    s3Requests += n;
    if (Number(k.split(' ').pop()) >= 500) s3Errors += n;
  }
  for (const b of Object.values(c.backends)) {
    written += b.ops.put?.bytes ?? 0;
    read += b.ops.get?.bytes ?? 0;
    for (const o of Object.values(b.ops)) backendErrors += o?.errors ?? 0;
  }
  return {
    at,
    s3Requests,
    s3Errors,
    s3BytesIn: c.s3BytesIn,
    s3BytesOut: c.s3BytesOut,
    backendBytesWritten: written,
    backendBytesRead: read,
    backendErrors,
    repairsDone: c.events.repairs_done ?? 0,
    repairsFailed: c.events.repairs_failed ?? 0,
  };
}

/** The coding budget of the answering isolate (engine/coding-budget.ts snapshot()). */
export type { BudgetGauge };

const IDLE_BUDGET: BudgetGauge = { capacityBytes: 0, heldBytes: 0, holders: 0, waiters: 0, waitingBytes: 0, oldestHeldMs: null, reclaimed: 0, leases: [] };

export interface BuildInfo {
  version: string;
  /** When the answering isolate started (build-info.ts isolateStartedAt). */
  isolateStartedAt: number;
}

export function buildStatus(o: {
  config: StatusConfig;
  snapshot: OpsSnapshot;
  data: DataHealth;
  signed: boolean;
  from: number;
  build: BuildInfo;
  codingBudget?: BudgetGauge;
}): StatusDoc {
  const { config, snapshot, data, signed } = o;
  const codingBudget = o.codingBudget ?? IDLE_BUDGET;
  const stored = new Map<string, { shards: number; bytes: number }>();
  for (const b of data.buckets) {
    for (const [id, s] of Object.entries(b.backends)) {
      const t = stored.get(id) ?? { shards: 0, bytes: 0 };
      stored.set(id, { shards: t.shards + s.shards, bytes: t.bytes + s.bytes });
    }
  }
  const recent = windowCounters(snapshot.minutes, snapshot.now - HEALTH_WINDOW_MS);
  const backends = config.backends.map((b) => {
    const h = backendHealth(b, snapshot.totals.backends[b.id], recent.backends[b.id], stored.get(b.id));
    if (!signed) delete h.lastError;
    return h;
  });
  const sample = sampleOf(data);
  const sum = (f: (b: BucketHealth) => number) => data.buckets.reduce((n, b) => n + f(b), 0);
  const onBackends = sample.bytes - sum((b) => b.inlineBytes);
  const scrubbed = data.buckets.filter((b) => b.objects > 0);
  // Like the other redundancy reads here, a health without the per-policy counts counts as none.
  const byPolicy = sumRedundancy(data.buckets.map((b) => b.redundancy?.byPolicy ?? {}));
  const checks = healthChecks({
    backends,
    policies: config.policies,
    degradedObjects: sample.degradedObjects,
    repairStuck: sum((b) => b.repairStuck ?? 0),
    unitsAtRisk: sample.unitsAtRisk,
    unitsLost: sample.unitsLost,
  });
  const journals: JournalEntry[] = [
    ...(data.bucketListJournal ? [{ name: '(bucket list)', status: data.bucketListJournal }] : []),
    ...data.buckets.flatMap((b) => (b.journal ? [{ name: b.bucket, status: b.journal }] : [])),
  ].map(({ name, status }) => ({ name, behind: status.pending > 0 || status.dumping, storedAt: status.ackedTakenAt }));
  checks.push(journalCheck(journals, snapshot.now, config.deployment.mode, signed)); // unsigned: no bucket names
  if (data.catalogLoss) checks.push(catalogLossCheck(lossCounts(data.catalogLoss)));
  if (config.partitions) checks.push(partitionCheck(data.buckets, config.partitions, signed));
  const journalUnits = journalSummary(
    [data.bucketListJournal ?? null, ...data.buckets.map((b) => b.journal ?? null)],
    new Set(config.backends.filter((b) => b.state === 'draining' || b.state === 'retired').map((b) => b.id)),
  );
  checks.push(journalRedundancyCheck(journalUnits));
  // A leaving backend is empty only once the journal's shard files are off it too (their bytes are not counted).
  const journalShards = journalShardsByBackend([data.bucketListJournal ?? null, ...data.buckets.map((b) => b.journal ?? null)]);
  checks.push(
    fleetCheck(
      config.backends.map((b) => {
        const s = stored.get(b.id) ?? { shards: 0, bytes: 0 };
        return { id: b.id, state: b.state ?? 'active', shards: s.shards + (journalShards.get(b.id) ?? 0), bytes: s.bytes };
      }),
    ),
  );
  const adopting = new Map(
    Object.entries(config.adoptSources ?? {}).map(([bucket, s]) => [
      bucket,
      adoptProgressOf(bucket, s.source, data.buckets.find((b) => b.bucket === bucket)?.adopt ?? null, s.prices, snapshot.now, s.repassMs),
    ]),
  );
  // The adopted buckets' moves (issue 41): complete or not, failures in the last pass.
  if (adopting.size) checks.push(adoptCheck([...adopting.values()], signed));
  const health = worstOf(checks);
  const restriping = new Map(
    config.policyOf
      ? data.buckets.flatMap((b) => {
          const p = restripeProgressOf(
            b.bucket,
            config.policyOf!(b.bucket),
            b.redundancy?.byPolicy ?? {},
            b.restripe ?? null,
            snapshot.now,
            b.placements ?? [],
          );
          return p ? [[b.bucket, p] as const] : [];
        })
      : [],
  );
  const ev = snapshot.totals.events;
  let s3Requests = 0,
    s3Errors = 0;
  for (const [k, n] of Object.entries(snapshot.totals.s3)) {
    s3Requests += n;
    if (Number(k.split(' ').pop()) >= 500) s3Errors += n;
  }
  const doc: StatusDoc = {
    service: 'shardgate',
    version: o.build.version,
    now: snapshot.now,
    since: snapshot.since,
    signed,
    health,
    checks,
    coder: config.coder,
    deployment: { mode: config.deployment.mode, warningCount: config.deployment.warnings.length, ...(signed ? { warnings: config.deployment.warnings } : {}) },
    policies: config.policies,
    defaultPolicy: config.defaultPolicy,
    backends,
    data: {
      buckets: data.buckets.length,
      objects: sample.objects,
      bytes: sample.bytes,
      inlineBytes: sum((b) => b.inlineBytes),
      storedBytes: sample.storedBytes,
      overhead: onBackends > 0 ? sample.storedBytes / onBackends : null,
      classes: sumClasses(data.buckets.map((b) => b.classes ?? {})),
      replicationOverhead: REPLICATION_COPIES,
      degradedObjects: sample.degradedObjects,
      degradedUnits: sample.degradedUnits,
      repairStuck: sum((b) => b.repairStuck ?? 0),
      missingShards: sample.missingShards,
      redundancy: {
        atRisk: sample.unitsAtRisk,
        lost: sample.unitsLost,
        ...bytesAtRiskAndLost(byPolicy),
        byPolicy,
        byMissing: data.buckets.reduce<Record<string, number>>((out, b) => {
          for (const [n, units] of Object.entries(b.redundancy?.byMissing ?? {})) out[n] = (out[n] ?? 0) + units;
          return out;
        }, {}),
      },
      oldestDegradedAt: data.buckets.reduce<number | null>(
        (t, b) => (b.oldestDegradedAt !== null && (t === null || b.oldestDegradedAt < t) ? b.oldestDegradedAt : t),
        null,
      ),
      uploads: sum((b) => b.uploads),
      reservations: { held: sum((b) => b.reservations.held), expired: sample.reservationsExpired },
      garbage: { queued: sample.garbageQueued, due: sample.garbageDue },
      scrub: {
        mode: config.scrubMode,
        checked: sum((b) => b.scrub.checked),
        units: sum((b) => b.scrub.units),
        coverage: sum((b) => b.scrub.units) ? sum((b) => b.scrub.checked) / sum((b) => b.scrub.units) : null,
        oldestUnchecked: ((o) => (o && !signed ? { since: o.since } : o))(
          data.buckets.reduce<StatusDoc['data']['scrub']['oldestUnchecked']>((o, b) => {
            const u = b.scrub.oldestUnchecked;
            return u && (o === null || u.since < o.since) ? { bucket: b.bucket, ...u } : o;
          }, null),
        ),
        oldestPassCompletedAt:
          scrubbed.length && scrubbed.every((b) => b.scrub.lastPassCompletedAt !== null)
            ? Math.min(...scrubbed.map((b) => b.scrub.lastPassCompletedAt!))
            : null,
        passes: sum((b) => b.scrub.passes),
      },
      lifecycle: lifecycleSummary(data.buckets),
      restripe: restripeSummary([...restriping.values()]),
      ...(adopting.size ? { adopt: adoptSummary([...adopting.values()]) } : {}),
      journal: journalUnits,
    },
    upkeep: {
      rates: upkeepRates(
        snapshot.minutes,
        snapshot.now,
        sample.degradedUnits,
        sum((b) => Math.max(0, b.scrub.units - b.scrub.checked)),
      ),
      repairsQueued: ev.repairs_queued ?? 0,
      repairsDone: ev.repairs_done ?? 0,
      repairsFailed: ev.repairs_failed ?? 0,
      repairedShards: ev.repaired_shards ?? 0,
      scrubRuns: ev.scrub_runs ?? 0,
      scrubShards: ev.scrub_shards ?? 0,
      scrubDamaged: ev.scrub_damaged ?? 0,
      collectorRuns: ev.collector_runs ?? 0,
      collectedUnits: ev.collected_units ?? 0,
      lifecycleRuns: ev.lifecycle_runs ?? 0,
      lifecycleExpired: ev.lifecycle_expired ?? 0,
      lifecycleNoncurrentDeleted: ev.lifecycle_noncurrent_deleted ?? 0,
      lifecycleMarkersRemoved: ev.lifecycle_markers_removed ?? 0,
      lifecycleUploadsAborted: ev.lifecycle_uploads_aborted ?? 0,
      lifecycleFailed: ev.lifecycle_failed ?? 0,
      lifecycleTransitioned: ev.lifecycle_transitioned ?? 0,
      lifecycleTransitionedBytes: ev.lifecycle_transitioned_bytes ?? 0,
      lifecycleTransitionsBlocked: ev.lifecycle_transitions_blocked ?? 0,
    },
    s3: {
      requests: s3Requests,
      errors: s3Errors,
      bytesIn: snapshot.totals.s3BytesIn,
      bytesOut: snapshot.totals.s3BytesOut,
      recent: Object.fromEntries(
        Object.entries(recent.s3Latency ?? {})
          .sort(([a], [b]) => (a < b ? -1 : 1))
          .map(([op, l]) => [op, { requests: l.count, p50Ms: roundMs(quantile(l.hist, 0.5)), p99Ms: roundMs(quantile(l.hist, 0.99)) }]),
      ),
    },
    isolate: {
      startedAt: o.build.isolateStartedAt,
      uptimeSeconds: Math.max(0, Math.floor((snapshot.now - o.build.isolateStartedAt) / 1000)),
      codingBudget: signed ? codingBudget : { ...codingBudget, leases: [] },
    },
    series: {
      from: o.from,
      stepMs: 60_000,
      minutes: snapshot.minutes.map((m) => minutePoint(m.at, m.counters)),
      // The recorded samples, then this moment's, so the plots end now.
      samples: [...snapshot.samples.filter((s) => s.at < sample.at), sample],
    },
  };
  if (signed) {
    doc.buckets = data.buckets.map((b) => {
      const progress = restriping.get(b.bucket);
      const { placements: _, ...health } = b; // the counts behind the redundancy: many rows, nothing to read
      if (health.journal?.redundancy?.placements) {
        const { placements: __, ...redundancy } = health.journal.redundancy;
        health.journal = { ...health.journal, redundancy };
      }
      return {
        ...health,
        storedBytes: storedOf(b),
        scrubCoverage: coverageOf(b),
        clientTraffic: snapshot.totals.clients?.[b.bucket] ?? { requests: 0, bytesIn: 0, bytesOut: 0 },
        ...(progress ? { restripeProgress: progress } : {}),
        ...(adopting.has(b.bucket) ? { adoptProgress: adopting.get(b.bucket)! } : {}),
        ...(config.storagePrices ? { monthlyStorageCost: monthlyStorageCost(b, config.storagePrices) } : {}),
      };
    });
  }
  return doc;
}
