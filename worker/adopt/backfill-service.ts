/**
 * The adopted buckets' backfill as the gateway offers it (issue 41): the admin API's `adopt`,
 * `adopt-status`, `adopt-estimate`, `adopt-pause` and `adopt-detach` (worker/app/admin.ts), the
 * cron's run (worker/index.ts) and the status page read it. One per isolate (gateway.ts), over the
 * adopting store of that isolate, so the backfill and the isolate's client misses share one single
 * flight per key.
 */
import type { PricedBackend } from '../model/prices.ts';
import type { AdoptCatalog, AdoptChainCatalog } from '../model/adopt-backfill.ts';
import { S3Error } from '../model/errors.ts';
import type { ObjectStore } from '../model/object-store.ts';
import type { Adoption } from './adopting-store.ts';
import { backfillBatch, emptyReport, type BackfillReport } from './backfill.ts';
import { ADOPT_CHAIN_STALE_MS } from './backfill-chain.ts';
import { detachSource, pauseBackfill, startBackfill, type DetachAnswer } from './backfill-control.ts';
import { parseState, passDue, progressOf, type BackfillProgress } from '../model/adopt-backfill.ts';
import { estimateAdoption, type AdoptionEstimate, type PolicyShape } from './estimate.ts';
import type { SourceClient } from './source-client.ts';

export interface BackfillServiceDeps {
  catalog: AdoptCatalog & AdoptChainCatalog;
  /** The engine's store (no read-through). */
  inner: ObjectStore;
  adoption: Adoption;
  sources: ReadonlyMap<string, SourceClient>;
  /** What reading a bucket's source costs (config `sources.<bucket>.prices`; null: unpriced). */
  prices: (bucket: string) => PricedBackend | null;
  /** The bucket's policy, and the storage prices (per GB-month) of the backends it places on. */
  policy: (bucket: string) => PolicyShape;
  storagePrices: (policy: PolicyShape) => number[];
  /** How long after a clean pass the bucket's next pass starts (config `sources.<bucket>.repassHours`); absent: 24 h. */
  repassMs?: (bucket: string) => number;
  now?: () => number;
  log?: (fields: Record<string, unknown>) => void;
  /**
   * Starts the bucket's backfill chain (backfill-chain.ts) when a queue is bound, so `adopt` goes
   * on link after link without waiting for the cron; absent: the cron and `--run` drive it.
   */
  kick?: (bucket: string) => Promise<void>;
}

export interface RunOptions {
  maxObjects: number;
  /** ms the run may take. */
  ms: number;
  maxRequests?: number;
  pageSize?: number;
}

export class BackfillService {
  constructor(private readonly d: BackfillServiceDeps) {}

  private get now(): number {
    return (this.d.now ?? Date.now)();
  }

  /** The buckets with a source. */
  buckets(): string[] {
    return [...this.d.sources.keys()].sort();
  }

  private sourceOf(bucket: string): SourceClient {
    const source = this.d.sources.get(bucket);
    if (!source) throw new S3Error('InvalidArgument', `bucket "${bucket}" has no source (config "sources"): nothing to adopt`);
    return source;
  }

  private batch(bucket: string, o: RunOptions, newPass: boolean): Promise<BackfillReport> {
    return backfillBatch(
      {
        catalog: this.d.catalog,
        inner: this.d.inner,
        adoption: this.d.adoption,
        source: this.sourceOf(bucket),
        ...(this.d.now ? { now: this.d.now } : {}),
        ...(this.d.log ? { log: this.d.log } : {}),
      },
      {
        bucket,
        maxObjects: o.maxObjects,
        deadline: this.now + o.ms,
        newPass,
        ...(o.maxRequests === undefined ? {} : { maxRequests: o.maxRequests }),
        ...(o.pageSize === undefined ? {} : { pageSize: o.pageSize }),
        ...(this.d.repassMs ? { repassMs: this.d.repassMs(bucket) } : {}),
      },
    );
  }

  /**
   * A run not driven by a chain (the operator's `adopt`, the cron without a queue) under the
   * bucket's one driver claim (the chain's: backfill-chain.ts), so two drivers never walk one
   * bucket at once and overwrite each other's counters. Claimed elsewhere: nothing runs, and the
   * report says by whom.
   */
  private async alone(bucket: string, run: () => Promise<BackfillReport>): Promise<BackfillReport> {
    const id = `run-${crypto.randomUUID()}`;
    if (!(await this.d.catalog.claimAdoptChain(bucket, id, this.now, ADOPT_CHAIN_STALE_MS))) {
      return { ...emptyReport(bucket), idle: 'another run is driving it' };
    }
    try {
      return await run();
    } finally {
      await this.d.catalog.endAdoptChain(bucket, id);
    }
  }

  /**
   * The operator's `adopt`: the backfill started (or resumed after a pause), then one run now
   * (unless a chain or another run is driving it: then that one goes on). A new pass starts at
   * once when none is in progress, even soon after a clean one.
   */
  async start(bucket: string, o: RunOptions): Promise<{ report: BackfillReport; progress: BackfillProgress }> {
    this.sourceOf(bucket);
    await startBackfill(this.d.catalog, bucket, this.now);
    const report = await this.alone(bucket, () => this.batch(bucket, o, true));
    if (report.stopped && !report.sourceDown) await this.d.kick?.(bucket);
    return { report, progress: await this.progressOf(bucket) };
  }

  /** Whether the bucket's backfill wants runs: started, not paused nor detached, a pass in progress or due. */
  async wantsRun(bucket: string): Promise<boolean> {
    const s = parseState(await this.d.catalog.getAdoptState(bucket));
    if (!s || s.startedAt === null || s.paused || s.detachedAt !== null) return false;
    return s.inPass || passDue(s, this.now, this.d.repassMs?.(bucket));
  }

  /** One run of a bucket's backfill as the cron runs it (a new pass only when one is due). */
  run(bucket: string, o: RunOptions): Promise<BackfillReport> {
    return this.batch(bucket, o, false);
  }

  /** The cron's run: each bucket with a source, in turn, sharing `o`'s objects and time. */
  async runAll(o: RunOptions): Promise<BackfillReport[]> {
    const end = this.now + o.ms;
    let objects = o.maxObjects;
    const reports: BackfillReport[] = [];
    for (const bucket of this.buckets()) {
      if (objects < 1 || this.now >= end) break;
      const r = await this.alone(bucket, () => this.run(bucket, { ...o, maxObjects: objects, ms: end - this.now }));
      objects -= r.adopted + r.readopted + r.changed + r.failed;
      reports.push(r);
    }
    return reports;
  }

  async progressOf(bucket: string): Promise<BackfillProgress> {
    const s = this.sourceOf(bucket).settings;
    const state = parseState(await this.d.catalog.getAdoptState(bucket));
    const progress = progressOf(bucket, `${s.endpoint}/${s.bucket}`, state, this.d.prices(bucket), this.now, this.d.repassMs?.(bucket));
    const through = this.d.adoption.writeThrough;
    return through.on(bucket) ? { ...progress, writeThrough: await through.lag(bucket) } : progress;
  }

  /** The cron's retry of write-through (write-through.ts): up to `max` pending keys synced again. */
  syncWrites(max: number): Promise<{ synced: number; pending: number }> {
    return this.d.adoption.writeThrough.syncPending(max);
  }

  async progress(bucket?: string): Promise<BackfillProgress[]> {
    return Promise.all((bucket === undefined ? this.buckets() : [bucket]).map((b) => this.progressOf(b)));
  }

  /**
   * The bill before the move (estimate.ts), up to `maxPages` listing pages from `after`. A walk
   * from the first key to the last is kept in the record: the total that "time left" is read against.
   */
  async estimate(bucket: string, after: string | null, maxPages: number, pageSize?: number): Promise<AdoptionEstimate> {
    const source = this.sourceOf(bucket);
    if (await this.d.adoption.isDetached(bucket)) throw new S3Error('InvalidRequest', `the source of bucket "${bucket}" is detached: it is never read again`);
    const policy = this.d.policy(bucket);
    const e = await estimateAdoption({
      bucket,
      source,
      sourcePrices: this.d.prices(bucket),
      policy,
      storagePrices: this.d.storagePrices(policy),
      after,
      maxPages,
      ...(pageSize === undefined ? {} : { pageSize }),
    });
    if (after === null && e.next === null) {
      const row = await this.d.catalog.getAdoptState(bucket);
      const state = parseState(row) ?? parseState('{}')!;
      state.estimate = { objects: e.objects, bytes: e.bytes, at: this.now };
      await this.d.catalog.setAdoptState(bucket, JSON.stringify(state));
    }
    return e;
  }

  async pause(bucket: string): Promise<BackfillProgress> {
    this.sourceOf(bucket);
    await pauseBackfill(this.d.catalog, bucket);
    return this.progressOf(bucket);
  }

  async detach(bucket: string, force: boolean): Promise<DetachAnswer & { progress: BackfillProgress }> {
    this.sourceOf(bucket);
    const answer = await detachSource(this.d.catalog, bucket, force, this.now);
    if (answer.detached) this.d.adoption.noteDetached(bucket, true);
    return { ...answer, progress: await this.progressOf(bucket) };
  }
}
