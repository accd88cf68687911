/**
 * The operator's API, a Hono sub-app mounted at `/_shardgate/admin/`, POST only, signed with a
 * SigV4 Authorization header by a key whose scope has the `admin` action (model/access.ts):
 * anonymous access never applies here, presigned URLs are refused (one could be replayed for
 * 7 days) and so is SigV2 (it does not sign `bucket=`). Parameters are read from the request view the
 * signature was checked over (model/request.ts); a bucket name must be one S3 would accept
 * (model/bucket-name.ts), as it becomes part of every shard key:
 *   rebuild?bucket=NAME[&journal=0]  recover the bucket's catalog from its journal on the backends
 *                              (upkeep/journal-restore.ts; journal=0: not), then from the shard
 *                              headers of later writes (upkeep/rebuild.ts); a bucket whose catalog
 *                              was found lost (upkeep/catalog-loss.ts) is merged into and its loss ended
 *   journal-upkeep             one run of the journal's scrub, repair, moves and re-stripe now, as the
 *                              cron runs it (upkeep/journal-upkeep.ts)
 *   catalog-loss               the journal instances the backends hold ahead of the catalog, by name
 *   discard-journal?bucket=NAME  gives up the backends' journal of a bucket found lost
 *                              (upkeep/journal-discard.ts): its writes are accepted again
 *   scrub[?mode=heads|verify]  one scrubber pass now, as the cron runs it
 *   scrub?bucket=NAME[&prefix=P][&after=UNIT][&mode=]  every unit of the bucket (under the prefix)
 *                              checked, a page per call: pass `next` back as `after` until it is
 *                              null (upkeep/scrub-selection.ts); the cron's cursor is left alone
 *   locate?bucket=NAME&key=K[&versionId=V]  where the shards of that version are: per unit and
 *                              shard its backend, shard key, present/missing/size (upkeep/locate.ts)
 *   partitions?bucket=NAME[&at=JSON]  the bucket's partition map (docs/PARTITIONS.md) and each
 *                              partition's figures against the split thresholds; with `at`, a
 *                              JSON array of keys, an empty bucket that never split is cut into
 *                              partitions there (a static split: BucketNotEmpty otherwise; idempotent)
 *   partitions?bucket=NAME&split=KEY[&splitAt=K]  an on-line split of the partition holding KEY, at
 *                              K (absent: its median key), then the same answer
 *   collect                    one garbage-collector pass now
 *   lifecycle                  one slice of the lifecycle job now, as the cron runs it (upkeep/lifecycle.ts)
 *   lifecycle-estimate?bucket=NAME[&days=N,M...][&rules=XML]  the bill of the bucket's transitions before they run
 *                              (upkeep/transition-estimate.ts): versions and bytes each rule moves now and
 *                              N, M... lifecycle days from now, GETs, PUTs, DELETEs, egress per backend at
 *                              the configured prices, the monthly storage change; `rules`: a
 *                              LifecycleConfiguration document to price instead of the stored
 *                              rules, before it is set; `measured`: the cost report's `transition`
 *                              job line so far
 *   events?bucket=NAME[&limit=N]  the bucket's event notifications (docs/NOTIFICATIONS.md): per
 *                              destination queued, delivered, retried, dead-lettered, dropped, the
 *                              oldest undelivered event's age; and its newest N (default 20) events
 *                              with their delivery state (catalog/sql-outbox.ts)
 *   journal                    one journal run now, as the cron runs it (upkeep/journal.ts): every
 *                              catalog instance's due segments stored on the backends
 *   repair[?bucket=NAME][&prefix=P][&limit=N]  repair now up to N (default 20) units recorded degraded
 *                              (upkeep/repair-sweep.ts); answers what is left
 *   worklist[?bucket=NAME][&prefix=P][&stuck=1][&limit=N]  the repair worklist as it is (no repair): each
 *                              degraded unit with its attempts, next try and last error; `stuck`:
 *                              only units tried DEAD_LETTER_ATTEMPTS times or more (dead letters)
 *   costs[?bucket=NAME][&maxPages=N]  what each backend and bucket costs (upkeep/cost.ts): bytes
 *                              stored (listed, at most N pages per backend, default 100), requests
 *                              and egress counted by every isolate since the shared record began
 *                              (ops), at the configured prices; `jobs`: the part of them the
 *                              fleet mover, the re-stripe and the transitions made, per job and backend (over all
 *                              buckets: empty with ?bucket=)
 *   drain[?bucket=NAME][&max=N]  one mover run now, as the cron runs it (upkeep/drain.ts): up to
 *                              N (default 50) shards moved off draining and retired backends
 *   drain-status               per leaving backend: shards and bytes left, moved, rate, time remaining;
 *                              per backend being rebalanced onto: shards moved onto it, buckets done
 *   drain-estimate?backend=ID  what draining ID would cost before anything moves (GETs, PUTs,
 *                              DELETEs, egress per backend, at the configured prices)
 *   drain-estimate?backend=ID&rebalance=1  the same for a rebalance onto ID (an active backend):
 *                              the shards placement now assigns to it, one per unit at most
 *   restripe[?bucket=NAME][&max=N]  one re-stripe run now, as the cron runs it (upkeep/restripe.ts):
 *                              up to N (default 20) versions rewritten under their bucket's policy
 *   restripe-status            per bucket with a re-stripe: units and bytes left, rewritten, rate,
 *                              time remaining, the pass's counts (upkeep/restripe-progress.ts)
 *   adopt?bucket=NAME[&max=N]  starts (or resumes) the backfill of a bucket with a source and runs it
 *                              now, as the cron does, up to N (default 40; each about a dozen
 *                              subrequests) objects read from the source (adopt/backfill.ts); answers the run and the progress. A new
 *                              pass starts when none is in progress
 *   adopt-status[?bucket=NAME]  per bucket with a source: the backfill's phase, pass, counters,
 *                              source egress and its price, rate, time left, whether complete
 *   adopt-estimate?bucket=NAME[&after=KEY][&pages=N]  the move's bill before it starts: the
 *                              source's listing walked (no GET), up to N (default 200) pages of
 *                              1000 keys from after KEY; objects, bytes, egress and request cost,
 *                              storage under the bucket's policy; `next` not null: call again with it
 *   adopt-pause?bucket=NAME    pauses the backfill (the checkpoint is kept; `adopt` resumes)
 *   adopt-detach?bucket=NAME[&force=1]  the source is never read again: refused (409, with the
 *                              reason) until a pass over the source ended clean, unless forced
 *   quota?bucket=NAME[&bytes=N][&objects=N][&clear=1][&rebalance=1]  the bucket's quota and usage;
 *                              sets or clears it (quota-routes.ts, docs/QUOTAS.md)
 *   usage[?bucket=NAME]        bytes, objects, versions, delete markers, multipart bytes, backend
 *                              traffic and estimated monthly cost per bucket (upkeep/bucket-usage.ts)
 *   local-backend[?id=ID&state=down|up]  local development only, from this machine: take a backend
 *                              down or bring it back (local-backend-switch.ts); answers every switch
 * Answers are JSON; errors go through the app's one onError (JSON for operator routes).
 * `curl --aws-sigv4 "aws:amz:<region>:s3" --user KEY:SECRET -X POST <url>` signs such a request.
 */
import { Hono, type Context } from 'hono';
import { SealError, type KeyRing } from '../format/seal.ts';
import { rotateKeys } from '../upkeep/rotate-keys.ts';
import type { Backend } from '../../backends/types.ts';
import type { Catalog } from '../catalog/ports.ts';
import type { BackendPrices, RepairTask } from '../engine/index.ts';
import { isValidBucketName } from '../model/bucket-name.ts';
import { S3Error } from '../model/errors.ts';
import { requestView } from '../model/request.ts';
import type { AppEnv, Authenticate } from '../s3/context.ts';
import { collectGarbage } from '../upkeep/collector.ts';
import { costReport, emptyUsage, type Money, type TrafficSource, type UpkeepJob, type Usage } from '../upkeep/cost.ts';
import { measureStored } from '../upkeep/stored-bytes.ts';
import { bucketShardPrefixes, bucketsByDirectory } from '../format/shard-key.ts';
import { rebuildCatalog } from '../upkeep/rebuild.ts';
import { discardJournal, resolveCatalogLoss } from '../upkeep/journal-discard.ts';
import type { CatalogLossGate } from './catalog-loss-gate.ts';
import { listWorklist, repairDegraded } from '../upkeep/repair-sweep.ts';
import { scrubBatch, type ScrubOptions } from '../upkeep/scrubber.ts';
import { scrubSelection } from '../upkeep/scrub-selection.ts';
import { locateObject } from '../upkeep/locate.ts';
import type { DrainReport, FleetBackend } from '../upkeep/drain.ts';
import { drainProgress, rebalanceProgress } from '../upkeep/drain-progress.ts';
import { estimateDrain, estimateRebalance } from '../upkeep/drain-estimate.ts';
import { localBackendRoute, type LocalBackendSwitch } from './local-backend-switch.ts';
import { quotaRoutes } from './quota-routes.ts';
import { kmsKeyRoutes } from './kms-key-routes.ts';
import { restoreKmsKeys } from '../upkeep/kms-key-restore.ts';
import type { KmsKeys } from '../engine/index.ts';
import type { RestripePolicy } from '../catalog/restripe-record.ts';
import type { JournalReport } from '../upkeep/journal.ts';
import type { JournalUpkeepReport } from '../upkeep/journal-upkeep.ts';
import { lifecycleBatch, type LifecycleReport, type LifecycleStore } from '../upkeep/lifecycle.ts';
import type { RestripeReport } from '../upkeep/restripe.ts';
import type { TransitionEstimate } from '../upkeep/transition-estimate.ts';
import type { LifecycleRule } from '../model/lifecycle.ts';
import { parseLifecycleConfiguration } from '../s3/lifecycle-xml.ts';
import { assess } from '../upkeep/split-partitions.ts';
import { SPLIT_DEFAULTS, type SplitThresholds } from '../model/split-thresholds.ts';
import type { BucketRestripeProgress } from '../upkeep/restripe-progress.ts';
import type { BackfillService } from '../adopt/backfill-service.ts';

/** Told of every upkeep run, to count and log it (gateway.ts); `by` says who asked. */
export interface UpkeepObserver {
  scrubbed(report: { units: number; shards: number; damaged: number }, mode: string, ms: number, by: 'cron' | 'operator'): void;
  collected(units: number, ms: number, by: 'cron' | 'operator'): void;
  lifecycled(report: LifecycleReport, ms: number, by: 'cron' | 'operator'): void;
}

export interface AdminDeps {
  authenticate: Authenticate;
  catalog: Catalog;
  backends: Backend[];
  /** Opens sealed shard headers for a rebuild (config "encryption"); absent: sealed units are reported unrecoverable. */
  keyRing?: KeyRing;
  /** The named KMS keys (SSE-KMS: engine/kms-keys.ts); absent: no key routes (kms-key-routes.ts answers so). */
  kms?: KmsKeys;
  region: string;
  scrub: { mode: 'off' | ScrubOptions['mode']; unitsPerRun: number; headsBy?: ScrubOptions['headsBy'] };
  enqueueRepair: (task: RepairTask) => void;
  /** One repair task done now (the queue's work, counted and logged). */
  repair: (task: RepairTask) => Promise<void>;
  upkeep?: UpkeepObserver;
  /** For `drain`, `drain-status` and `drain-estimate`: the fleet as configured, and one mover run (gateway.ts). */
  /** `pools`: the policies' pools of backends, which the estimate keeps pooled units in (upkeep/pools.ts). */
  drain?: {
    fleet: FleetBackend[];
    pools?: string[][];
    run: (options: { bucket?: string; maxMoves: number }, by: 'cron' | 'operator') => Promise<DrainReport>;
  };
  /** For `usage`: the storage policy the config gives a bucket (absent: the report names none). */
  policyOf?: (bucket: string) => RestripePolicy;
  /** For `partitions`: the split thresholds (config `partitions`); absent: the defaults'. */
  partitions?: SplitThresholds;
  /** For `restripe` and `restripe-status`: one re-stripe run, and every bucket's progress (gateway.ts). */
  restripe?: {
    run: (options: { bucket?: string; maxVersions: number }, by: 'cron' | 'operator') => Promise<RestripeReport>;
    progress: () => Promise<BucketRestripeProgress[]>;
  };
  /** For `lifecycle`: the store whose delete paths expirations take, and the length of a lifecycle day. */
  /** `store`: one per run (a transitioner holds the run's budget), or one for all. */
  /** `estimate`: for `lifecycle-estimate`, the bill of a bucket's transitions now and `afterDays` lifecycle days on. */
  lifecycle?: {
    store: LifecycleStore | (() => LifecycleStore);
    dayMs: number;
    estimate?: (bucket: string, afterDays: number[], rules?: LifecycleRule[]) => Promise<TransitionEstimate>;
  };
  /** For `journal-upkeep`: one run of the journal's scrub, repair, moves and re-stripe (upkeep/journal-upkeep.ts). */
  journalUpkeep?: (by: 'cron' | 'operator') => Promise<JournalUpkeepReport>;
  /** Told when a rebuild or a discard ends a catalog loss (the isolate's write gate). */
  catalogLoss?: CatalogLossGate;
  /** For `journal`: one journal run (gateway.ts, upkeep/journal.ts). */
  journal?: (by: 'cron' | 'operator') => Promise<JournalReport>;
  /** For `local-backend`, in local development only (local-backend-switch.ts): each backend's down/up switch. */
  localSwitch?: LocalBackendSwitch;
  /** For `adopt`, `adopt-status`, `adopt-estimate`, `adopt-pause`, `adopt-detach`: the adopted buckets' backfill (gateway.ts). */
  adopt?: BackfillService;
  /** For `costs`: the traffic counted and each backend's prices (null: unpriced). */
  costs?: { traffic: TrafficSource; prices: Record<string, (BackendPrices & { source?: string }) | null> };
}

/** Partitions a static split makes at most (the root's map is read by every isolate that meets the bucket). */
const MAX_STATIC_PARTITIONS = 64;

/** `at`: a JSON array of keys (a key may hold any character a query parameter can carry). */
function boundariesOf(at: string | null): string[] {
  if (at === null) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(at);
  } catch {
    parsed = null;
  }
  if (!Array.isArray(parsed) || !parsed.every((k) => typeof k === 'string')) throw new S3Error('InvalidArgument', 'partitions: `at` is a JSON array of keys');
  return parsed as string[];
}

export function createAdmin(deps: AdminDeps): Hono<AppEnv> {
  const admin = new Hono<AppEnv>();
  const byId = new Map(deps.backends.map((b) => [b.id, b]));

  admin.use(async (c, next) => {
    if (c.req.method !== 'POST') throw new S3Error('MethodNotAllowed');
    const view = requestView(c.req.raw);
    const auth = await deps.authenticate(c.req.raw, view);
    if (!auth.accessKeyId) throw new S3Error('AccessDenied', 'the admin API needs a signed request');
    // A presigned URL could be replayed by whoever sees it for up to 7 days; SigV2 does not sign `bucket=`.
    if (auth.signature !== 'sigv4-header')
      throw new S3Error('AccessDenied', 'the admin API accepts SigV4 Authorization headers only (no presigned URLs, no SigV2)');
    if (!auth.access?.admin) throw new S3Error('AccessDenied', 'the admin API needs a key whose scope has the admin action');
    c.set('view', view);
    await next();
  });

  if (deps.localSwitch) admin.post('/local-backend', localBackendRoute(deps.localSwitch));
  quotaRoutes(admin, deps); // quota and usage (quota-routes.ts)
  kmsKeyRoutes(admin, deps); // named KMS keys (kms-key-routes.ts)

  admin.post('/rebuild', async (c: Context<AppEnv>) => {
    const bucket = c.var.view.query.get('bucket');
    if (!bucket) throw new S3Error('InvalidArgument', 'rebuild needs ?bucket=NAME');
    if (!isValidBucketName(bucket)) throw new S3Error('InvalidBucketName', undefined, { BucketName: bucket });
    await deps.catalog.insertBucket(bucket, deps.region).catch((err) => {
      if (!(err instanceof S3Error && err.code === 'BucketAlreadyOwnedByYou')) throw err;
    });
    const journal = c.var.view.query.get('journal') !== '0';
    const lost = bucket in (await deps.catalog.catalogLoss()).lost;
    // The named KMS keys first (from the bucket list's journal, those the live table lacks): SSE-KMS shard headers open only with them.
    const kmsKeys = deps.kms && journal ? await restoreKmsKeys(deps.backends, deps.catalog, deps.keyRing) : undefined;
    const result = await rebuildCatalog(bucket, deps.backends, deps.catalog, deps.keyRing, { journal, merge: lost });
    // The loss ends once the journal of the bucket is in (its numbering now goes on after it).
    if (lost && result.journal && result.journal.segments > 0 && !result.journal.skipped && !result.journal.unreadable.length) {
      deps.catalogLoss?.update(await resolveCatalogLoss(bucket, { catalog: deps.catalog, backends: deps.backends, ring: deps.keyRing }, Date.now()));
    }
    return c.json({
      ...result,
      catalogLost: lost,
      ...(kmsKeys ? { kmsKeys: { restored: kmsKeys.restored, kept: kmsKeys.kept.length, unreadable: kmsKeys.unreadable } } : {}),
    });
  });

  admin.post('/journal-upkeep', async (c) => {
    if (!deps.journalUpkeep) throw new S3Error('NotImplemented', 'no catalog journal in this gateway');
    return c.json(await deps.journalUpkeep('operator'));
  });

  admin.post('/catalog-loss', async (c) => c.json(await deps.catalog.catalogLoss()));

  admin.post('/discard-journal', async (c) => {
    const bucket = c.var.view.query.get('bucket');
    if (!bucket) throw new S3Error('InvalidArgument', 'discard-journal needs ?bucket=NAME');
    if (!(bucket in (await deps.catalog.catalogLoss()).lost))
      throw new S3Error('InvalidArgument', `bucket ${bucket} is not recorded as lost (shardgate rebuild --lost lists those that are)`);
    const report = await discardJournal(bucket, { catalog: deps.catalog, backends: deps.backends, ring: deps.keyRing }, Date.now());
    deps.catalogLoss?.update(report.loss);
    return c.json(report);
  });

  // Key rotation: re-wraps data keys under ?to= (the active key) for up to ~20 s per call, catalog
  // only; call again until `done` (shardgate rotate-keys does). upkeep/rotate-keys.ts.
  admin.post('/rotate-keys', async (c) => {
    const to = c.var.view.query.get('to');
    if (!to) throw new S3Error('InvalidArgument', 'rotate-keys needs ?to=KEY_ID (the active key)');
    if (!deps.keyRing) throw new S3Error('InvalidArgument', 'this gateway has no key ring (config "encryption")');
    try {
      const report = await rotateKeys(deps.catalog, deps.keyRing, to, { deadline: Date.now() + 20_000 });
      // The named KMS keys' material is wrapped under the gateway's keys too: under the active one, so old keys can go.
      return c.json({ ...report, kmsKeyVersionsRewrapped: (await deps.kms?.rewrapMaterials()) ?? 0 });
    } catch (err) {
      if (err instanceof SealError) throw new S3Error('InvalidArgument', err.message);
      throw err;
    }
  });

  admin.post('/scrub', async (c) => {
    const mode = c.var.view.query.get('mode') ?? (deps.scrub.mode === 'off' ? 'heads' : deps.scrub.mode);
    if (mode !== 'heads' && mode !== 'verify') throw new S3Error('InvalidArgument', 'mode is heads or verify');
    const bucket = c.var.view.query.get('bucket');
    const prefix = c.var.view.query.get('prefix');
    if (prefix !== null && bucket === null) throw new S3Error('InvalidArgument', 'scrub: prefix goes with bucket');
    const started = Date.now();
    if (bucket !== null) {
      if (!isValidBucketName(bucket)) throw new S3Error('InvalidBucketName', undefined, { BucketName: bucket });
      await deps.catalog.getBucket(bucket); // NoSuchBucket
      const report = await scrubSelection(
        deps.catalog,
        byId,
        { bucket, prefix: prefix ?? '', mode, headsBy: deps.scrub.headsBy, after: c.var.view.query.get('after'), maxCalls: 600 },
        deps.enqueueRepair,
      );
      deps.upkeep?.scrubbed(report, mode, Date.now() - started, 'operator');
      return c.json(report);
    }
    const report = await scrubBatch(deps.catalog, byId, { mode, unitsPerRun: deps.scrub.unitsPerRun, headsBy: deps.scrub.headsBy }, deps.enqueueRepair);
    deps.upkeep?.scrubbed(report, mode, Date.now() - started, 'operator');
    return c.json(report);
  });

  admin.post('/locate', async (c) => {
    const q = c.var.view.query;
    const bucket = q.get('bucket'),
      key = q.get('key');
    if (!bucket || key === null || key === '') throw new S3Error('InvalidArgument', 'locate needs ?bucket=NAME&key=KEY');
    if (!isValidBucketName(bucket)) throw new S3Error('InvalidBucketName', undefined, { BucketName: bucket });
    return c.json(await locateObject(deps.catalog, byId, bucket, key, q.get('versionId')));
  });

  admin.post('/partitions', async (c) => {
    const q = c.var.view.query;
    const bucket = q.get('bucket');
    if (!bucket) throw new S3Error('InvalidArgument', 'partitions needs ?bucket=NAME[&at=JSON array of keys | &split=KEY[&splitAt=K] | &merge=KEY]');
    if (!isValidBucketName(bucket)) throw new S3Error('InvalidBucketName', undefined, { BucketName: bucket });
    const at = boundariesOf(q.get('at'));
    if (at.length > MAX_STATIC_PARTITIONS - 1) throw new S3Error('InvalidArgument', `at most ${MAX_STATIC_PARTITIONS} partitions are made at once`);
    if (at.length) return c.json(await deps.catalog.splitBucketStatically(bucket, at));
    // An on-line split: of the partition holding `split`, at `splitAt` (absent: its median key).
    const split = q.get('split');
    if (split !== null) await deps.catalog.splitPartition(bucket, split, q.get('splitAt') ?? undefined);
    // An on-line merge: the partition holding `merge` into its lower neighbour.
    const merge = q.get('merge');
    if (merge !== null) await deps.catalog.mergePartition(bucket, merge);
    const thresholds = deps.partitions ?? SPLIT_DEFAULTS;
    const map = await deps.catalog.getPartitionMap(bucket);
    return c.json({ ...map, thresholds, partitions: (await deps.catalog.partitionsOf(bucket)).map((p) => assess(p, thresholds)) });
  });

  admin.post('/collect', async (c) => {
    const started = Date.now();
    const collected = await collectGarbage(deps.catalog, byId);
    deps.upkeep?.collected(collected, Date.now() - started, 'operator');
    return c.json({ collected });
  });

  admin.post('/lifecycle', async (c) => {
    if (!deps.lifecycle) throw new S3Error('NotImplemented', 'no lifecycle job in this gateway');
    const started = Date.now();
    const store = typeof deps.lifecycle.store === 'function' ? deps.lifecycle.store() : deps.lifecycle.store;
    const report = await lifecycleBatch(deps.catalog, store, { dayMs: deps.lifecycle.dayMs });
    deps.upkeep?.lifecycled(report, Date.now() - started, 'operator');
    return c.json(report);
  });

  admin.post('/lifecycle-estimate', async (c) => {
    const estimate = deps.lifecycle?.estimate;
    if (!estimate) throw new S3Error('NotImplemented', 'no lifecycle estimate in this gateway');
    const bucket = c.var.view.query.get('bucket');
    if (!bucket) throw new S3Error('InvalidArgument', 'lifecycle-estimate needs ?bucket=NAME');
    if (!isValidBucketName(bucket)) throw new S3Error('InvalidBucketName', undefined, { BucketName: bucket });
    const days = (c.var.view.query.get('days') ?? '').split(',').filter(Boolean).map(Number);
    if (days.length > 10 || days.some((d) => !Number.isInteger(d) || d < 0 || d > 36_500))
      throw new S3Error('InvalidArgument', 'days is up to 10 comma-separated whole numbers of days from 0 to 36500');
    // Rules not set yet, priced before they are (the document PutBucketLifecycleConfiguration takes).
    const xml = c.var.view.query.get('rules');
    const rules = xml === null ? undefined : parseLifecycleConfiguration(xml);
    return c.json({ ...(await estimate(bucket, days, rules)), measured: await measuredJob(deps, 'transition') });
  });

  admin.post('/events', async (c) => {
    const q = c.var.view.query;
    const bucket = q.get('bucket');
    if (bucket === null || !isValidBucketName(bucket)) throw new S3Error('InvalidBucketName', undefined, { BucketName: bucket ?? '' });
    const limit = Number(q.get('limit') ?? 20);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new S3Error('InvalidArgument', 'limit is an integer from 1 to 1000');
    const now = new Date();
    const [destinations, events] = await Promise.all([deps.catalog.eventStatus(bucket, now), deps.catalog.listEvents(bucket, limit)]);
    return c.json({ bucket, at: now.getTime(), destinations, events });
  });

  admin.post('/journal', async (c) => {
    if (!deps.journal) throw new S3Error('NotImplemented', 'no catalog journal in this gateway');
    return c.json(await deps.journal('operator'));
  });

  admin.post('/repair', async (c) => {
    const bucket = c.var.view.query.get('bucket') ?? undefined;
    if (bucket !== undefined && !isValidBucketName(bucket)) throw new S3Error('InvalidBucketName', undefined, { BucketName: bucket });
    const limit = Number(c.var.view.query.get('limit') ?? 20);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw new S3Error('InvalidArgument', 'limit is an integer from 1 to 100');
    const prefix = c.var.view.query.get('prefix') ?? undefined;
    return c.json(await repairDegraded(deps.catalog, deps.repair, { bucket, prefix, limit }));
  });

  admin.post('/worklist', async (c) => {
    const q = c.var.view.query;
    const bucket = q.get('bucket') ?? undefined;
    if (bucket !== undefined && !isValidBucketName(bucket)) throw new S3Error('InvalidBucketName', undefined, { BucketName: bucket });
    const limit = Number(q.get('limit') ?? 100);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new S3Error('InvalidArgument', 'limit is an integer from 1 to 1000');
    return c.json(await listWorklist(deps.catalog, { bucket, prefix: q.get('prefix') ?? undefined, limit, stuckOnly: q.get('stuck') === '1' }));
  });

  admin.post('/costs', async (c) => {
    if (!deps.costs) throw new S3Error('NotImplemented', 'no cost accounting in this gateway');
    const { traffic, prices } = deps.costs;
    const q = c.var.view.query;
    const bucket = q.get('bucket') ?? undefined;
    if (bucket !== undefined && !isValidBucketName(bucket)) throw new S3Error('InvalidBucketName', undefined, { BucketName: bucket });
    const maxPages = Number(q.get('maxPages') ?? 100);
    if (!Number.isInteger(maxPages) || maxPages < 1 || maxPages > 1000) throw new S3Error('InvalidArgument', 'maxPages is an integer from 1 to 1000');
    // Shard keys name a bucket or one of its shelves (format/shard-key.ts): the report names buckets.
    const names = await bucketsByDirectory(
      (await deps.catalog.listBucketRecords()).map((b) => b.name),
      deps.keyRing,
    );
    const prefixes = bucket === undefined ? undefined : await bucketShardPrefixes(bucket, deps.keyRing);
    const measured = await measureStored(deps.backends, { prefixes, maxPagesPerBackend: maxPages });
    const counted = await traffic();
    const named = <T extends { bucket: string | null }>(x: T): T => ({ ...x, bucket: x.bucket === null ? null : (names.get(x.bucket) ?? x.bucket) });
    const report = costReport({
      backends: deps.backends,
      prices,
      stored: measured.stored.map(named),
      now: new Date(),
      traffic: counted.counts.map(named).filter((t) => bucket === undefined || t.bucket === bucket),
      trafficSince: counted.since,
      // The jobs' calls are counted over all buckets: a part of one bucket's lines they are not.
      ...(bucket === undefined && counted.jobs ? { jobs: counted.jobs } : {}),
    });
    return c.json({
      ...report,
      storedListing: { complete: measured.complete, errors: measured.errors, listRequests: measured.pages },
      note: 'storagePerMonth: a month at the size listed now. egress and requests: counted by every isolate since trafficSince, as the backends were asked (a read cancelled early counts whole).',
    });
  });

  admin.post('/drain', async (c) => {
    const drain = needDrain(deps);
    const bucket = c.var.view.query.get('bucket') ?? undefined;
    if (bucket !== undefined && !isValidBucketName(bucket)) throw new S3Error('InvalidBucketName', undefined, { BucketName: bucket });
    const max = Number(c.var.view.query.get('max') ?? 50);
    if (!Number.isInteger(max) || max < 1 || max > 1000) throw new S3Error('InvalidArgument', 'max is an integer from 1 to 1000');
    const report = await drain.run({ bucket, maxMoves: max }, 'operator');
    return c.json({ ...report, progress: await drainProgress(deps.catalog, leavingOf(drain.fleet)) });
  });

  admin.post('/drain-status', async (c) => {
    const drain = needDrain(deps);
    return c.json({
      backends: await drainProgress(deps.catalog, leavingOf(drain.fleet)),
      rebalance: await rebalanceProgress(
        deps.catalog,
        drain.fleet.filter((b) => b.state === 'active' && b.rebalance),
      ),
      measured: await measuredMoves(deps),
    });
  });

  admin.post('/drain-estimate', async (c) => {
    const drain = needDrain(deps);
    const backend = c.var.view.query.get('backend');
    if (!backend || !drain.fleet.some((b) => b.id === backend))
      throw new S3Error('InvalidArgument', `drain-estimate needs ?backend=ID, one of ${drain.fleet.map((b) => b.id).join(', ')}`);
    if (c.var.view.query.get('rebalance') === '1') {
      if (drain.fleet.find((b) => b.id === backend)!.state !== 'active')
        throw new S3Error('InvalidArgument', `a rebalance moves shards onto an active backend; ${backend} is not active`);
      return c.json(await estimateRebalance(deps.catalog, backend, drain.fleet, deps.costs?.prices ?? {}, undefined, drain.pools));
    }
    return c.json(await estimateDrain(deps.catalog, backend, drain.fleet, deps.costs?.prices ?? {}, undefined, drain.pools));
  });

  admin.post('/restripe', async (c) => {
    const restripe = needRestripe(deps);
    const bucket = c.var.view.query.get('bucket') ?? undefined;
    if (bucket !== undefined && !isValidBucketName(bucket)) throw new S3Error('InvalidBucketName', undefined, { BucketName: bucket });
    const max = Number(c.var.view.query.get('max') ?? 20);
    if (!Number.isInteger(max) || max < 1 || max > 1000) throw new S3Error('InvalidArgument', 'max is an integer from 1 to 1000');
    const report = await restripe.run({ bucket, maxVersions: max }, 'operator');
    return c.json({ ...report, progress: await restripe.progress() });
  });

  admin.post('/restripe-status', async (c) => {
    return c.json({ buckets: await needRestripe(deps).progress() });
  });

  const adoptBucket = (c: Context<AppEnv>): string => {
    const bucket = c.var.view.query.get('bucket');
    // Only a bucket the config gives a source is accepted (BackfillService answers InvalidArgument for another).
    if (!bucket) throw new S3Error('InvalidArgument', `${c.req.path.split('/').pop()} needs ?bucket=NAME (a bucket with a source)`);
    return bucket;
  };

  admin.post('/adopt', async (c) => {
    const adopt = needAdopt(deps);
    const bucket = adoptBucket(c);
    const max = Number(c.var.view.query.get('max') ?? 40);
    if (!Number.isInteger(max) || max < 1 || max > 1000) throw new S3Error('InvalidArgument', 'max is an integer from 1 to 1000');
    return c.json(await adopt.start(bucket, { maxObjects: max, ms: ADOPT_RUN_MS }));
  });

  admin.post('/adopt-status', async (c) => {
    const bucket = c.var.view.query.get('bucket') ?? undefined;
    return c.json({ buckets: await needAdopt(deps).progress(bucket === undefined ? undefined : adoptBucket(c)) });
  });

  admin.post('/adopt-estimate', async (c) => {
    const adopt = needAdopt(deps);
    const bucket = adoptBucket(c);
    const pages = Number(c.var.view.query.get('pages') ?? 200);
    if (!Number.isInteger(pages) || pages < 1 || pages > 500) throw new S3Error('InvalidArgument', 'pages is an integer from 1 to 500');
    return c.json(await adopt.estimate(bucket, c.var.view.query.get('after'), pages));
  });

  admin.post('/adopt-pause', async (c) => c.json(await needAdopt(deps).pause(adoptBucket(c))));

  admin.post('/adopt-detach', async (c) => {
    const answer = await needAdopt(deps).detach(adoptBucket(c), c.var.view.query.get('force') === '1');
    const { state: _state, ...shown } = answer;
    // Refused: 409 with the reason as the error's message (the CLI shows it), the progress beside it.
    return c.json(answer.detached ? shown : { code: 'DetachRefused', message: answer.reason, ...shown }, answer.detached ? 200 : 409);
  });

  admin.all('*', (c) => {
    throw new S3Error(
      'InvalidRequest',
      `unknown admin action "${c.req.path.split('/').pop()}" (rebuild, catalog-loss, discard-journal, journal-upkeep, scrub, locate, collect, lifecycle, lifecycle-estimate, repair, worklist, costs, drain, drain-status, drain-estimate, restripe, restripe-status, adopt, adopt-status, adopt-estimate, adopt-pause, adopt-detach)`,
    );
  });
  return admin;
}

function needDrain(deps: AdminDeps): NonNullable<AdminDeps['drain']> {
  if (!deps.drain) throw new S3Error('NotImplemented', 'no mover in this gateway');
  return deps.drain;
}

/** How long one `adopt` call may read from the source (a Worker request has a wall-clock and a subrequest limit). */
const ADOPT_RUN_MS = 25_000;

function needAdopt(deps: AdminDeps): BackfillService {
  if (!deps.adopt) throw new S3Error('NotImplemented', 'no bucket of this gateway has a source (config "sources")');
  return deps.adopt;
}

function needRestripe(deps: AdminDeps): NonNullable<AdminDeps['restripe']> {
  if (!deps.restripe) throw new S3Error('NotImplemented', 'no re-stripe in this gateway');
  return deps.restripe;
}

const leavingOf = (fleet: FleetBackend[]) => fleet.filter((b) => b.state !== 'active');

/**
 * What the mover has asked of the backends since the ops record began: the cost report's `move`
 * job line (GETs, PUTs, egress, priced), to hold against `drain-estimate`. Cheap: no listing of
 * stored bytes. The DELETEs of the old copies are the collector's (counted per backend), not here.
 * Null without cost accounting.
 */
async function measuredMoves(deps: AdminDeps): Promise<{ since: string; usage: Usage; cost: Money | null } | null> {
  return measuredJob(deps, 'move');
}

/** What upkeep job `job` has asked of the backends since the ops record began (its cost report line); null without cost accounting. */
async function measuredJob(deps: AdminDeps, job: UpkeepJob): Promise<{ since: string; usage: Usage; cost: Money | null } | null> {
  if (!deps.costs) return null;
  const counted = await deps.costs.traffic();
  const report = costReport({
    backends: deps.backends,
    prices: deps.costs.prices,
    stored: [],
    traffic: [],
    jobs: counted.jobs,
    trafficSince: counted.since,
    now: new Date(),
  });
  const line = report.jobs.find((j) => j.job === job);
  return { since: report.trafficSince, usage: line?.usage ?? emptyUsage(), cost: line?.cost ?? null };
}
