/**
 * The composition root: everything one isolate builds once from its env. Parsed config ->
 * backends (each wrapped in a meter), catalog, unit store and erasure-coded store -> the Hono app
 * (with the operator routes, the admin sub-app and the request log), plus the repair sender and
 * what the gateway knows about itself (ops: the isolate's meter, its flusher to the shared
 * record, the status service). No logic of its own beyond the wiring; rebuilt only if
 * SHARDGATE_CONFIG changes. The config is reviewed first, wherever it runs (deployment.ts):
 * refused, the isolate serves the refusal (refusal.ts), or with the local-development signal the
 * gateway to loopback requests only and the refusal to every other.
 */
import { setPoisonMode } from './model/lent-chunks.ts';
import { flushJournal, JOURNAL_MAX_CALLS, type JournalReport } from './upkeep/journal.ts';
import { detectCatalogLoss, journalHold, type SegmentName } from './upkeep/catalog-loss.ts';
import { journalUpkeep, type JournalUpkeepReport } from './upkeep/journal-upkeep.ts';
import { CatalogLossGate } from './app/catalog-loss-gate.ts';
import type { Hono } from 'hono';
import { createBackend, DeadlineBackend, MeteredBackend, type Backend } from '../backends/index.ts';
import { activeKernel, checksums } from '../coder-wasm/index.ts';
import { createAdmin, type UpkeepObserver } from './app/admin.ts';
import { LocalBackendSwitch } from './app/local-backend-switch.ts';
import { createApp, OPERATOR_PREFIX } from './app/app.ts';
import { makeAuthenticate, makePostFormGate } from './app/auth-gate.ts';
import { BackgroundWork } from './app/background.ts';
import { DurableCatalog } from './catalog/durable-catalog.ts';
import type { Catalog } from './catalog/ports.ts';
import { declaredKmsKeys, keyRingOf, transitBackings } from './config/key-ring.ts';
import { KmsKeys, TransitProbe } from './engine/index.ts';
import { engineSettings, parseConfig, priceBook, s3Settings, sourcePrices, type GatewayConfig } from './config/config.ts';
import { isLocalDevelopment, isLoopbackRequest, reviewDeployment, type DeploymentReview } from './config/deployment.ts';
import { BackendReachability, EcStore, restripePolicyFor, UnitStore, type RepairTask } from './engine/index.ts';
import { deadlineOf, waitBound, withRequestDeadline } from './model/request-deadline.ts';
import { createOperator } from './app/operator.ts';
import { createConsole } from './app/console.ts';
import { MemoryOpsRecord } from './ops/book.ts';
import { trafficByBucket, trafficByJob } from './ops/counters.ts';
import { OpsFlusher } from './ops/flusher.ts';
import { IsolateMeter } from './ops/meter.ts';
import { durableOpsRecord } from './ops/durable-record.ts';
import type { OpsObject } from './ops/ops-object.ts';
import { LoadBalancerHealth } from './ops/lb-health.ts';
import { OpsService } from './ops/service.ts';
import { logRefusal, refusingApp } from './app/refusal.ts';
import { RepairRouter } from './upkeep/repair-router.ts';
import { requestLog } from './app/request-log.ts';
import type { AppEnv } from './s3/context.ts';
import { runRepair } from './upkeep/repair.ts';
import { drainBatch, type DrainReport, type FleetBackend } from './upkeep/drain.ts';
import { restripeBatch, type RestripeReport } from './upkeep/restripe.ts';
import { estimateTransitions } from './upkeep/transition-estimate.ts';
import { Transitioner } from './upkeep/transition.ts';
import type { LifecycleStore } from './upkeep/lifecycle.ts';
import type { MoveLink } from './upkeep/move-chain.ts';
import { restripeProgress, type BucketRestripeProgress } from './upkeep/restripe-progress.ts';
import { AccessLogDelivery } from './upkeep/access-log.ts';

/** How long one mover run may start moves (the cron's invocation, an admin request). */
const DRAIN_RUN_MS = 20_000;
/** How long one re-stripe run may start rewrites (the cron's invocation, an admin request). */
const RESTRIPE_RUN_MS = 20_000;
/**
 * Backend requests one re-stripe run may ask for: a Worker invocation has a subrequest limit
 * (1000 on the paid plan), shared in the cron's with the collector, scrubber and mover.
 */
const RESTRIPE_REQUESTS_PER_RUN = 300;
/** Lifecycle transitions one lifecycle run may rewrite, the backend requests they may ask for, and how long it may start them (upkeep/transition.ts). */
const TRANSITION_VERSIONS_PER_RUN = 20;
const TRANSITION_REQUESTS_PER_RUN = 200;
const TRANSITION_RUN_MS = 20_000;
/** How long one journal run may start segments (the cron runs it every minute). */
const JOURNAL_RUN_MS = 40_000;
import { DAY_MS } from './model/lifecycle.ts';
import { unfenced } from './model/bucket-settings.ts';
import { errorMessage } from './model/error-message.ts';
import { Adoption, BackfillService, sourceClients, startAdoptChains, type AdoptChainDeps, type AdoptLink } from './adopt/index.ts';
import { SourceProbe } from './adopt/source-probe.ts';

export interface Env {
  SHARDGATE_CONFIG?: string;
  CATALOG: DurableObjectNamespace;
  /** The shared record of the gateway's health (OpsObject); without it each isolate keeps its own. */
  OPS?: DurableObjectNamespace;
  /** Repair tasks, the mover's chain links (upkeep/move-chain.ts) and the backfill's (adopt/backfill-chain.ts). */
  REPAIR_QUEUE?: Queue<RepairTask | MoveLink | AdoptLink>;
  [binding: string]: unknown;
}

export interface Gateway {
  config: GatewayConfig;
  /** The configured backends as built (fault wrappers included), without the meter. */
  backends: Backend[];
  catalog: Catalog;
  units: UnitStore;
  /** How the scrubber's 'heads' mode checks a shard (config scrub.headsBy; local development: a 1-byte read). */
  scrubHeadsBy: 'head' | 'tail-read';
  /** Which backends this isolate knows down (engine/reachability.ts): fed by every backend call's outcome. */
  reachability: BackendReachability;
  store: EcStore;
  app: Hono<AppEnv>;
  background: BackgroundWork;
  /** Sends a repair task to the queue (or repairs at once without one), kept alive by the current request. */
  enqueueRepair: (task: RepairTask) => void;
  /** The repair queue's work for one task (counted and logged). */
  repair: (task: RepairTask) => Promise<void>;
  /** This isolate's counts (backend calls, requests, upkeep events) and the status service. */
  meter: IsolateMeter;
  flusher: OpsFlusher;
  ops: OpsService;
  /** Counts and logs an upkeep run (the cron's or the operator's). */
  upkeep: UpkeepObserver;
  /** Every configured backend with its state (active, draining, retired) and move limits. */
  fleet: FleetBackend[];
  /** One mover run (upkeep/drain.ts), counted and logged; nothing to do when every backend is active. */
  drain: (options: { bucket?: string; maxMoves: number }, by: 'cron' | 'operator' | 'queue') => Promise<DrainReport>;
  /** One re-stripe run (upkeep/restripe.ts), counted and logged; nothing to do when every bucket's versions are stored as its policy says. */
  restripe: (options: { bucket?: string; maxVersions: number }, by: 'cron' | 'operator' | 'queue') => Promise<RestripeReport>;
  /** Every re-striping bucket's progress (upkeep/restripe-progress.ts). */
  restripeProgress: () => Promise<BucketRestripeProgress[]>;
  /** The adopted buckets' backfill (issue 41); absent when no bucket has a source. */
  backfill: BackfillService | undefined;
  /** Its chain's parts (adopt/backfill-chain.ts) when a queue is bound; null: the cron drives it. */
  adoptChain: Omit<AdoptChainDeps, 'run'> | null;
  /** The length of a lifecycle day in ms (lifecycleDayMs). */
  lifecycleDayMs: number;
  /** What one lifecycle run acts through: the store's delete paths and a transitioner with the run's budget (upkeep/transition.ts). */
  lifecycleStore: () => LifecycleStore;
  /** One journal run (upkeep/journal.ts): every catalog instance's due segments stored, counted and logged. */
  journal: (by: 'cron' | 'operator') => Promise<JournalReport>;
  /** One run of the journal's scrub, repair, moves and re-stripe (upkeep/journal-upkeep.ts). */
  journalUpkeep: (by: 'cron' | 'operator') => Promise<JournalUpkeepReport>;
  /** Server access logs' delivery (upkeep/access-log.ts); the cron sweeps it. */
  accessLogs: AccessLogDelivery;
}

/**
 * The length of a lifecycle day: a real day, or locally (the local-development signal set) the
 * SHARDGATE_LIFECYCLE_DAY_SECONDS var, so tests see rules act in seconds (RGW's
 * rgw_lc_debug_interval, which ceph/s3-tests' lc_debug_interval mirrors). Deployed, the var is
 * ignored: no deployed gateway expires objects early because a var was left behind.
 */
export function lifecycleDayMs(env: Env): number {
  const raw = env.SHARDGATE_LIFECYCLE_DAY_SECONDS;
  if (raw === undefined || raw === '' || !isLocalDevelopment(env)) return DAY_MS;
  const seconds = Number(raw);
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > 86_400)
    throw new Error(`SHARDGATE_LIFECYCLE_DAY_SECONDS must be an integer from 1 to 86400, not '${String(raw)}'`);
  return seconds * 1000;
}

/** Access logs' roll interval deployed (AWS delivers within minutes) and locally (npm start, tests). */
export const ACCESS_LOG_ROLL_SECONDS = { deployed: 300, local: 5 };

/**
 * How old a batch of access log records gets before it rolls into a log object
 * (upkeep/access-log.ts): SHARDGATE_ACCESS_LOG_ROLL_SECONDS if set (1 to 3600), else 300 s
 * deployed and 5 s with the local-development signal, so that ceph/s3-tests' logging cases (which
 * wait 5.5 s for the roll) and a developer see logs at once.
 */
export function accessLogRollMs(env: Env): number {
  const raw = env.SHARDGATE_ACCESS_LOG_ROLL_SECONDS;
  if (raw === undefined || raw === '') return (isLocalDevelopment(env) ? ACCESS_LOG_ROLL_SECONDS.local : ACCESS_LOG_ROLL_SECONDS.deployed) * 1000;
  const seconds = Number(raw);
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > 3600)
    throw new Error(`SHARDGATE_ACCESS_LOG_ROLL_SECONDS must be an integer from 1 to 3600, not '${String(raw)}'`);
  return seconds * 1000;
}

/** What answers an env's requests: a Hono app, or the local-only pair of two (loopbackOnly). */
export interface RequestHandler {
  fetch(request: Request, env: unknown, ctx?: ExecutionContext): Response | Promise<Response>;
}

/**
 * What an isolate serves: the gateway; or, when the review refused the config, the refusal; or,
 * refused but with the local-development signal, the gateway for requests that prove they were
 * made on this machine and the refusal for every other (deployment.ts: no variable alone unlocks
 * what the review refuses).
 */
interface Startup {
  app: RequestHandler;
  gateway?: Gateway;
  refused?: { app: Hono<AppEnv>; review: DeploymentReview };
}

let cached: { source: string; local: boolean; startup: Startup } | undefined;

function startup(env: Env): Startup {
  const source = env.SHARDGATE_CONFIG ?? '';
  const local = isLocalDevelopment(env);
  // Poison mode (model/lent-chunks.ts), a debug setting of local development: the tests run with it.
  const poison = env.SHARDGATE_POISON_BUFFERS;
  if (local && (poison === '1' || poison === '0')) setPoisonMode(poison === '1');
  if (cached?.source === source && cached.local === local) return cached.startup;
  if (!source) throw new Error('SHARDGATE_CONFIG is not set: see wrangler.toml [vars] and docs/CONFIGURATION.md');
  const config = parseConfig(source);
  // Reviewed wherever it runs; what it refuses is served to loopback requests only, and only with the signal.
  const review = reviewDeployment(config, env);
  let result: Startup;
  if (!review.refusals.length) {
    for (const w of review.warnings) console.warn(`shardgate: WARNING: ${w}`);
    const gateway = buildGateway(config, env, 'deployed', review.warnings);
    result = { app: gateway.app, gateway };
  } else {
    const refused = { app: refusingApp(review, config), review };
    if (local) {
      const gateway = buildGateway(config, env, 'local', []);
      result = { app: loopbackOnly(gateway.app, refused.app), gateway, refused };
    } else {
      logRefusal(review);
      result = { app: refused.app, refused };
    }
  }
  cached = { source, local, startup: result };
  return result;
}

/**
 * Requests that prove they are local (deployment.ts isLoopbackRequest) reach `local`; all others
 * `refused`. A plain function, not a third Hono app: routing every local request through one more
 * app was about 2% of a 64 KiB PUT's Worker CPU under `npm start` (bench:profile, issue 42).
 */
function loopbackOnly(local: Hono<AppEnv>, refused: Hono<AppEnv>): RequestHandler {
  return { fetch: (request, env, ctx) => (isLoopbackRequest(request) ? local : refused).fetch(request, env, ctx) };
}

/** The app that answers this env's requests: the gateway's, the refusal's, or the local-only pair. */
export function appFor(env: Env): RequestHandler {
  return startup(env).app;
}

/** The gateway of this env (queue, cron, tests); throws when the config was refused and the signal is not set. */
export function gatewayFor(env: Env): Gateway {
  const s = startup(env);
  if (s.gateway) return s.gateway;
  throw new Error(`shardgate refuses to run: ${s.refused!.review.refusals.length} configuration problem(s), logged when the isolate started`);
}

/** One JSON log line (what Workers Logs and `wrangler tail` index as fields). */
export function logLine(line: Record<string, unknown>, error = false): void {
  (error ? console.error : console.log)(JSON.stringify(line));
}

export function upkeepObserver(meter: IsolateMeter): UpkeepObserver {
  return {
    scrubbed(r, mode, ms, by) {
      meter.event('scrub_runs');
      meter.event('scrub_units', r.units);
      meter.event('scrub_shards', r.shards);
      meter.event('scrub_damaged', r.damaged);
      logLine({ msg: 'scrub', by, mode, units: r.units, shards: r.shards, damaged: r.damaged, ms });
    },
    collected(n, ms, by) {
      meter.event('collector_runs');
      meter.event('collected_units', n);
      logLine({ msg: 'collect', by, collected: n, ms });
    },
    lifecycled(r, ms, by) {
      meter.event('lifecycle_runs');
      meter.event('lifecycle_examined', r.examined);
      meter.event('lifecycle_expired', r.expired);
      meter.event('lifecycle_noncurrent_deleted', r.noncurrentDeleted);
      meter.event('lifecycle_markers_removed', r.markersRemoved);
      meter.event('lifecycle_uploads_aborted', r.uploadsAborted);
      meter.event('lifecycle_failed', r.failed);
      meter.event('lifecycle_transitioned', r.transitioned ?? 0);
      meter.event('lifecycle_transitioned_bytes', r.transitionedBytes ?? 0);
      meter.event('lifecycle_transitions_blocked', r.transitionsBlocked ?? 0);
      const { completed: _names, ...counts } = r;
      logLine({ msg: 'lifecycle', by, ...counts, ms }, r.failed > 0 || r.errors.length > 0);
    },
  };
}

function buildGateway(config: GatewayConfig, env: Env, mode: 'local' | 'deployed', warnings: string[]): Gateway {
  const built = config.backends.map((b) => createBackend(b, env));
  // Local development only: each backend behind a switch an operator's drill flips (admin
  // local-backend, npm run backend); a deployed gateway never has it.
  const localSwitch = isLocalDevelopment(env) ? new LocalBackendSwitch(built) : undefined;
  const backends: Backend[] = localSwitch?.backends ?? built;
  // Which backends are down (engine/reachability.ts): fed by every call's outcome below, probes
  // included; a backend in maintenance is down from the start.
  // The local R2 emulator answers HEAD from its metadata: a shard file deleted on disk would pass.
  const scrubHeadsBy = config.scrub.headsBy ?? (mode === 'local' ? 'tail-read' : 'head');
  const reachability = new BackendReachability(new Set(config.backends.filter((b) => b.maintenance).map((b) => b.id)));
  if (localSwitch) localSwitch.onChange = (id, state) => reachability.report(id, state === 'up');
  const dayMs = lifecycleDayMs(env);
  const meter = new IsolateMeter();
  const upkeep = upkeepObserver(meter);
  // Everything the gateway asks of a backend is counted (health, latency, the cost report's
  // traffic); the Gateway's `backends` stay the ones built (tests reach their fault wrappers there).
  // Every wait for a backend is bounded by the request's deadline (backends/deadline.ts).
  const metered = backends.map(
    (b) =>
      new MeteredBackend(new DeadlineBackend(b, () => waitBound(config.backendWaitMs)), (report) => {
        meter.backendCall(report);
        router.backendCall(report);
        if (report.outcome === 'Unavailable' || report.outcome === 'Timeout') reachability.report(report.backend, false, report.outcome === 'Timeout');
        else if (report.outcome !== 'Aborted' && report.outcome !== 'Throttled') reachability.report(report.backend, true);
      }),
  );
  const record = env.OPS ? durableOpsRecord(env.OPS as unknown as DurableObjectNamespace<OpsObject>) : new MemoryOpsRecord();
  const flusher = new OpsFlusher(meter, (delta) => record.record(delta), config.ops.flushSeconds * 1000);
  const catalog = new DurableCatalog(env.CATALOG as never, { garbageGraceMs: config.garbageGraceSeconds * 1000, maxVersionsPerKey: config.maxVersionsPerKey });
  const background = new BackgroundWork();
  const repair = async (task: RepairTask) => {
    const started = Date.now();
    try {
      await runRepair(task, { catalog, backends: units.byId, isDown: (id) => reachability.isDown(id) });
      meter.event('repairs_done');
      meter.event('repaired_shards', task.shards.length);
      logLine({
        msg: 'repair',
        outcome: 'done',
        bucket: task.bucket,
        key: task.key,
        unitId: task.unitId,
        shards: task.shards,
        reason: task.reason,
        ms: Date.now() - started,
      });
    } catch (err) {
      meter.event('repairs_failed');
      // A warning, not an error: a repair fails while a backend is still down, and is retried.
      logLine({
        msg: 'repair',
        level: 'warn',
        outcome: 'failed',
        bucket: task.bucket,
        key: task.key,
        unitId: task.unitId,
        shards: task.shards,
        reason: task.reason,
        ms: Date.now() - started,
        error: errorMessage(err),
      });
      throw err;
    }
  };
  // Damage and health go to the buckets' repair worklists (repair-router.ts); the catalog's alarms
  // hand due units to the repair queue.
  const router: RepairRouter = new RepairRouter({
    catalog,
    queued: !!env.REPAIR_QUEUE,
    repairNow: repair,
    keepAlive: (p) => background.keepAlive(p),
    log: logLine,
  });
  const enqueueRepair = (task: RepairTask) => {
    meter.event('repairs_queued');
    // Repair work a request starts is not the request's: its catalog calls carry no settings
    // stamp (model/bucket-settings.ts), so a policy changed meanwhile never refuses a repair.
    unfenced(() => router.report(task));
  };
  const baseRing = keyRingOf(config, env as unknown as Record<string, unknown>);
  // The named KMS keys (SSE-KMS) need the gateway's own active key to wrap their material; every
  // reader uses the ring that also opens them (engine/kms-keys.ts).
  // A key backed by a Vault / OpenBao transit key has its material wrapped there (engine/transit-client.ts),
  // each call bounded by the request's deadline as a backend call is.
  const transit = transitBackings(config, env as unknown as Record<string, unknown>, () => waitBound(config.backendWaitMs));
  const kms = baseRing?.active
    ? new KmsKeys({ catalog, ring: baseRing, region: config.region, declared: declaredKmsKeys(config), transit, log: logLine })
    : undefined;
  // Whether each transit key answers: with the first status read and each cron run (engine/transit-probe.ts).
  const transitProbe = transit.size ? new TransitProbe(transit, { log: (fields, error) => logLine(fields, error) }) : undefined;
  const keyRing = kms?.ring ?? baseRing;
  // A retired backend is never asked for anything: its shards read as unavailable (decoded around,
  // and rebuilt elsewhere by the mover); a draining one is read but takes no new shard.
  const state = new Map(config.backends.map((b) => [b.id, b.state]));
  const reachable = metered.filter((b) => state.get(b.id) !== 'retired');
  const units = new UnitStore(
    reachable,
    (bucket, key, unit, err) => {
      // The read goes on from other shards; the damaged one is fixed in the background.
      enqueueRepair({ bucket, key, unitId: unit.unitId, shards: [err.shardIndex], reason: { kind: err.reason, by: 'read', detail: err.message } });
    },
    {
      hedgeMs: config.readHedgeMs || undefined,
      prices: priceBook(config),
      onDegradedRead: (bucket) => router.degradedRead(bucket),
      keyRing,
      sealRecordBytes: config.encryption?.recordBytes,
      placeOn: config.backends.filter((b) => b.state === 'active').map((b) => b.id),
      reachability,
    },
  );
  const store = new EcStore({ catalog, units, settings: engineSettings(config), enqueueRepair, holder: () => background.holder(), kms });
  const authenticate = makeAuthenticate(config, env);
  const ops = new OpsService({
    config: {
      backends: config.backends.map((b) => ({ id: b.id, domain: b.domain, state: b.state, maintenance: b.maintenance })),
      policies: config.policies,
      defaultPolicy: config.defaultPolicy,
      coder: { kernel: activeKernel(), crc32: checksums().crc32Impl },
      scrubMode: config.scrub.mode,
      deployment: { mode, warnings },
      partitions: config.partitions,
      policyOf: (bucket) => restripePolicyFor(engineSettings(config), bucket),
      storagePrices: Object.fromEntries(Object.entries(config.backendPrices).map(([id, p]) => [id, p?.storagePerGBMonth ?? null])),
      adoptSources: Object.fromEntries(
        Object.entries(config.sources).map(([bucket, s]) => [
          bucket,
          { source: `${s.endpoint}/${s.bucket}`, prices: sourcePrices(s), repassMs: s.repassHours * 3_600_000 },
        ]),
      ),
    },
    catalog,
    backends: reachable,
    meter,
    record,
    flusher,
    probeEveryMs: config.ops.probeSeconds * 1000,
    codingBudget: () => store.codingBudget(),
    // The adopted buckets' sources (adopt/source-probe.ts) and the KMS keys' transit keys
    // (engine/transit-probe.ts), probed with the first status read and each cron run.
    probedWarnings: async () => [...((await sourceProbe?.warnings()) ?? []), ...((await transitProbe?.warnings()) ?? [])],
  });
  const metricsToken = config.ops.metricsTokenSecret ? env[config.ops.metricsTokenSecret] : undefined;
  if (config.ops.metricsTokenSecret && (typeof metricsToken !== 'string' || !metricsToken)) {
    throw new Error(
      `SHARDGATE_CONFIG: ops.metricsTokenSecret names secret ${config.ops.metricsTokenSecret}, which is not set (wrangler secret put ${config.ops.metricsTokenSecret})`,
    );
  }
  const fleet: FleetBackend[] = config.backends.map((b) => ({
    id: b.id,
    domain: b.domain,
    state: b.state,
    ...(b.rebalance ? { rebalance: true } : {}),
    ...(b.limits ? { limits: b.limits } : {}),
  }));
  // The policies' pools (config `backends`): the mover keeps a pooled unit's shards in its pool (upkeep/pools.ts).
  const pools = Object.values(config.policies).flatMap((p) => (p.backends ? [p.backends] : []));
  const drain = async (options: { bucket?: string; maxMoves: number }, by: 'cron' | 'operator' | 'queue'): Promise<DrainReport> => {
    const started = Date.now();
    // Its backend calls counted apart too, for the cost report's `jobs` (the collector's later
    // deletion of the old copies is not the mover's).
    const report = await meter.job('move', () =>
      drainBatch({ catalog, backends: units.byId, graceMs: config.garbageGraceSeconds * 1000, fleet, pools }, { ...options, deadline: started + DRAIN_RUN_MS }),
    );
    meter.event('drain_runs');
    meter.event('moved_shards', report.copied + report.rebuilt);
    meter.event('moved_bytes', report.bytes);
    meter.event('move_waits', report.waiting);
    logLine(
      {
        msg: 'drain',
        by,
        copied: report.copied,
        rebuilt: report.rebuilt,
        rebalanced: report.rebalanced,
        bytes: report.bytes,
        gone: report.gone,
        waiting: report.waiting,
        noTarget: report.noTarget,
        ms: Date.now() - started,
        ...(report.waits.length ? { firstWait: report.waits[0] } : {}),
      },
      false,
    );
    return report;
  };
  const settings = engineSettings(config);
  const lifecycleStore = (): LifecycleStore => {
    const transitioner = new Transitioner(
      { catalog, units, settings, graceMs: config.garbageGraceSeconds * 1000, writeReservationSeconds: config.writeReservationSeconds, fleet },
      { maxVersions: TRANSITION_VERSIONS_PER_RUN, maxRequests: TRANSITION_REQUESTS_PER_RUN, deadline: Date.now() + TRANSITION_RUN_MS },
    );
    // Its backend calls counted apart, for the cost report's `transition` job line (to hold against `lifecycle --estimate`).
    return {
      deleteObject: store.deleteObject,
      abortMultipartUpload: store.abortMultipartUpload,
      transition: (bucket, key, versionId, storageClass) => meter.job('transition', () => transitioner.transition(bucket, key, versionId, storageClass)),
    };
  };
  const restripe = async (options: { bucket?: string; maxVersions: number }, by: 'cron' | 'operator' | 'queue'): Promise<RestripeReport> => {
    const started = Date.now();
    const report = await meter.job('restripe', () =>
      restripeBatch(
        { catalog, units, settings, graceMs: config.garbageGraceSeconds * 1000, writeReservationSeconds: config.writeReservationSeconds, fleet },
        { ...options, deadline: started + RESTRIPE_RUN_MS, maxRequests: RESTRIPE_REQUESTS_PER_RUN },
      ),
    );
    meter.event('restripe_runs');
    meter.event('restriped_versions', report.rewritten);
    meter.event('restriped_bytes', report.bytes);
    meter.event('restripe_conflicts', report.conflicts);
    meter.event('restripe_failures', report.failed);
    if (report.scanned || report.rewritten) {
      const { problems, ...counts } = report;
      logLine({ msg: 'restripe', by, ...counts, ms: Date.now() - started, ...(problems.length ? { firstProblem: problems[0] } : {}) }, report.failed > 0);
    }
    return report;
  };
  const restripeStatus = () => restripeProgress(catalog, settings);
  // Catalog loss (upkeep/catalog-loss.ts): looked for before every journal run, so the journal of
  // a lost instance stops before it writes; writes to its bucket are refused meanwhile.
  const lossGate = new CatalogLossGate(() => catalog.catalogLoss());
  const lossHeaders = new Map<string, SegmentName | null>();
  const journal = async (by: 'cron' | 'operator'): Promise<JournalReport> => {
    const started = Date.now();
    let lookCalls = 0;
    let hold: string | null = null;
    try {
      const found = await detectCatalogLoss({ catalog, backends: reachable, ring: keyRing, headers: lossHeaders }, started);
      lossGate.update(found.loss);
      lookCalls = found.calls;
      hold = journalHold(found);
      const lost = Object.keys(found.loss.lost).length,
        suspect = Object.keys(found.loss.suspect).length;
      if (lost || suspect || found.unread)
        logLine({ msg: 'catalog-loss', by, lost, suspect, units: found.units, unknown: found.unknown, read: found.read, unread: found.unread }, lost > 0);
    } catch (err) {
      // Not knowing whether the catalog is lost, the journal stores nothing this run (it could hide an older one).
      hold = `catalog-loss look failed: ${errorMessage(err)}`;
      logLine({ msg: 'catalog-loss', by, outcome: 'failed', error: hold }, true);
    }
    // The look and the run share the invocation's subrequests.
    const report = await flushJournal(
      { catalog, units, policy: config.policies[config.defaultPolicy]! },
      { deadline: started + JOURNAL_RUN_MS, maxCalls: Math.max(100, JOURNAL_MAX_CALLS - lookCalls), hold },
    );
    meter.event('journal_runs');
    meter.event('journal_segments', report.segments);
    meter.event('journal_bytes', report.bytes);
    meter.event('journal_failures', report.failed.length);
    const { failed, ...counts } = report;
    logLine(
      { msg: 'journal', by, ...counts, failed: failed.length, ...(failed.length ? { firstFailure: failed[0] } : {}), ms: Date.now() - started },
      failed.length > 0 || !!report.held,
    );
    return report;
  };
  // The journal's segments get what data gets (upkeep/journal-upkeep.ts): scrub, repair, moves off
  // leaving backends, re-stripe of segments written narrower while backends were down.
  const journalUpkeepRun = async (by: 'cron' | 'operator'): Promise<JournalUpkeepReport> => {
    const started = Date.now();
    const mode = config.scrub.mode === 'verify' ? 'verify' : 'heads';
    const report = await journalUpkeep({ catalog, units, policy: config.policies[config.defaultPolicy]! }, { mode, headsBy: scrubHeadsBy });
    const { failed, ...counts } = report;
    if (report.segments || failed.length)
      logLine(
        { msg: 'journal upkeep', by, mode, ...counts, failed: failed.length, ...(failed.length ? { firstFailure: failed[0] } : {}), ms: Date.now() - started },
        false,
      );
    return report;
  };
  const logRequests = requestLog({ meter, flusher, log: config.ops.requestLogs });
  // Delivery runs as work of its own (no request's budget holder), kept alive by the request's waitUntil.
  const accessLogs = new AccessLogDelivery({
    catalog,
    store,
    rollMs: accessLogRollMs(env),
    log: logLine,
    detached: (keepAlive, fn) => background.run({ waitUntil: keepAlive }, fn),
  });
  // Buckets with a source (issue 41): clients see the adopting store; upkeep and delivery, the engine's.
  const sources = sourceClients(config.sources, env as Record<string, unknown>);
  const adoption = sources.size
    ? new Adoption(store, {
        sources,
        detach: (work) => background.detached(work),
        notFoundMs: Math.min(...Object.values(config.sources).map((s) => s.notFoundMs)),
        log: logLine,
        states: catalog,
        writeThroughBuckets: new Set(Object.entries(config.sources).flatMap(([bucket, s]) => (s.writeThrough ? [bucket] : []))),
      })
    : undefined;
  const sourceProbe = adoption
    ? new SourceProbe(sources, { detached: (bucket) => adoption.isDetached(bucket), log: (fields, error) => logLine(fields, error) })
    : undefined;
  // Their backfill (adopt/backfill.ts): the cron's runs or queue chain, the admin API's `adopt*`, the status page.
  const queue = env.REPAIR_QUEUE;
  const adoptChain: Omit<AdoptChainDeps, 'run'> | null =
    adoption && queue
      ? { catalog, send: async (link) => void (await queue.send(link)), wantsRun: (bucket) => backfill?.wantsRun(bucket) ?? Promise.resolve(false) }
      : null;
  const backfill = adoption
    ? new BackfillService({
        catalog,
        inner: store,
        adoption,
        sources,
        prices: (bucket) => (config.sources[bucket] ? sourcePrices(config.sources[bucket]) : null),
        policy: (bucket) => restripePolicyFor(engineSettings(config), bucket),
        repassMs: (bucket) => (config.sources[bucket]?.repassHours ?? 24) * 3_600_000,
        ...(adoptChain ? { kick: async (bucket: string) => void (await startAdoptChains([bucket], adoptChain)) } : {}),
        storagePrices: (policy) =>
          (policy.backends ?? config.backends.filter((b) => b.state === 'active').map((b) => b.id)).flatMap((id) => {
            const p = config.backendPrices[id];
            return p ? [p.storagePerGBMonth] : [];
          }),
        log: logLine,
      })
    : undefined;
  const app = createApp({
    store: adoption ? adoption.store() : store,
    config: store.config,
    authenticate,
    postForm: makePostFormGate(config, env),
    settings: s3Settings(config),
    around: (c, next) => {
      const s3Read = (c.req.method === 'GET' || c.req.method === 'HEAD') && !c.req.path.startsWith(OPERATOR_PREFIX);
      const deadline = { at: deadlineOf(Date.now(), config.backendWaitMs, s3Read), answered: false };
      return withRequestDeadline(deadline, () => background.run(c.get('scope'), () => logRequests(c, next)).finally(() => void (deadline.answered = true)));
    },
    accessLog: accessLogs,
    catalogLoss: lossGate,
    operator: createOperator({
      authenticate,
      ops,
      open: config.ops.open,
      metricsToken: metricsToken as string | undefined,
      health: new LoadBalancerHealth({
        policies: config.policies,
        defaultPolicy: config.defaultPolicy,
        backends: units.placeable,
        maintenance: reachability.maintenance,
        reachability,
        meter,
      }),
    }),
    console: config.webConsole.enabled ? createConsole({ authenticate, region: config.region, catalog }) : undefined,
    admin: createAdmin({
      authenticate,
      catalog,
      backends: reachable,
      keyRing,
      kms,
      region: config.region,
      scrub: { ...config.scrub, headsBy: scrubHeadsBy },
      enqueueRepair,
      repair,
      upkeep,
      localSwitch,
      drain: { fleet, pools, run: drain },
      policyOf: (bucket: string) => restripePolicyFor(engineSettings(config), bucket),
      partitions: config.partitions,
      restripe: { run: restripe, progress: restripeStatus },
      ...(backfill ? { adopt: backfill } : {}),
      journal,
      journalUpkeep: journalUpkeepRun,
      catalogLoss: lossGate,
      lifecycle: {
        store: lifecycleStore,
        dayMs,
        estimate: (bucket, afterDays, rules) =>
          estimateTransitions({
            catalog,
            units,
            settings,
            bucket,
            prices: config.backendPrices,
            afterDays,
            dayMs,
            now: Date.now(),
            ...(rules ? { rules } : {}),
          }),
      },
      costs: {
        // Traffic from the shared record (every isolate's counts since the record began), with
        // this isolate's latest counts flushed first.
        traffic: async () => {
          await flusher.flush();
          const snapshot = await record.snapshot(Date.now());
          return {
            since: new Date(snapshot.since),
            counts: trafficByBucket(snapshot.totals),
            jobs: trafficByJob(snapshot.totals),
            clients: snapshot.totals.clients ?? {},
          };
        },
        prices: config.backendPrices,
      },
    }),
  });
  return {
    config,
    backends: built,
    catalog,
    units,
    scrubHeadsBy,
    reachability,
    store,
    app,
    background,
    enqueueRepair,
    repair,
    meter,
    flusher,
    ops,
    upkeep,
    fleet,
    drain,
    restripe,
    restripeProgress: restripeStatus,
    backfill,
    adoptChain,
    lifecycleDayMs: dayMs,
    lifecycleStore,
    journal,
    journalUpkeep: journalUpkeepRun,
    accessLogs,
  };
}
