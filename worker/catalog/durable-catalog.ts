/**
 * DurableCatalog: the Catalog over CatalogObject Durable Objects (binding CATALOG), built from
 * the operation table (operations.ts): each port verb with a row is sent to the instance its
 * route names (routing.ts: one instance per bucket plus the bucket list's), with its arguments
 * as the row turns them, through the instance's one entry point (CatalogObject.dispatch), and its
 * Reply unwrapped (rpc.ts). What is written here is only what spans calls or keeps state: bucket
 * creation and deletion (two instances, not atomic; see each for the gap), the fenced retry, the
 * isolate's view of bucket settings, garbage into a gone bucket, the garbage sweep and the
 * journal's instances.
 * Object and multipart calls go straight to the bucket's instance, which itself answers
 * NoSuchBucket when it holds no bucket: the existence check is inside the same transaction as
 * the operation, so nothing is cached across requests and an object can never be committed into
 * a bucket that a deleteBucket has already emptied.
 * A bucket's request-path settings (its policy) ride on the calls a request already makes: the
 * table's fenced operations carry the stamp the request was checked against, and an instance
 * whose settings changed answers them instead of acting (model/bucket-settings.ts, `send`).
 * Known gap: takeDueGarbage visits every bucket's instance in turn (one RPC per bucket).
 */
import type * as S from '../model/object-store.ts';
import { DEFAULT_GARBAGE_GRACE_MS, DEFAULT_MAX_VERSIONS_PER_KEY, type CatalogOptions } from './rules.ts';
import { unwrap, type Fenced, type Reply } from './rpc.ts';
import { OPERATIONS, keyOf, operation, type CatalogEntry, type Operation, type OperationName, type WireOptions } from './operations.ts';
import { IN_BUCKET, instanceFor, type Route } from './routing.ts';
import { NO_SETTINGS, requestFence, type BucketSettings } from '../model/bucket-settings.ts';
import { S3Error } from '../model/errors.ts';
import { errorMessage } from '../model/error-message.ts';
import type { Catalog, GarbageUnits } from './types.ts';
import type { GarbageRow } from './sql-schema.ts';
import { BUCKET_LIST_INSTANCE } from '../format/journal.ts';

/** Buckets whose settings an isolate keeps (others cost a repeated call when they have some). */
const SETTINGS_SEEN_MAX = 4096;
/** Fenced tries of one call before the request fails (each answered with newer settings). */
const FENCED_ATTEMPTS = 3;

/** The CATALOG binding as the client uses it (a DurableObjectNamespace of CatalogObject): instances by name. */
export interface CatalogNamespace {
  idFromName(name: string): DurableObjectId;
  get(id: DurableObjectId): CatalogEntry;
}

/** The error of a Workers RPC stub whose object has no method of that name (workerd's wording). */
const NO_DISPATCH = /does not implement the method\W+dispatch\b/;

/**
 * `stub.dispatch(name, args, stamp)`; on an instance still running code from before the operation
 * table (for seconds to minutes after a deploy a new Worker can reach a Durable Object running
 * the previous version: Cloudflare's Durable Objects known issues), the call it understood then:
 * the method by name, or fenced(stamp, name, args).
 */
async function dispatch(stub: CatalogEntry, name: string, args: unknown[], stamp?: string): Promise<unknown> {
  try {
    return await (stamp === undefined ? stub.dispatch(name, args) : stub.dispatch(name, args, stamp));
  } catch (err) {
    if (!NO_DISPATCH.test(errorMessage(err))) throw err;
    const older = stub as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
    return await (stamp === undefined ? older[name]!(...args) : older.fenced!(stamp, name, args));
  }
}

/** The port verbs the table forwards (its rows neither `own` nor `internal`). */
type ForwardedName = { [K in OperationName]: (typeof OPERATIONS)[K] extends { own: true } | { internal: true } ? never : K }[OperationName];
type Forwarded = Pick<Catalog, ForwardedName & keyof Catalog>;

// The forwarded verbs are DurableCatalog's methods (put on its prototype from the table below).
export interface DurableCatalog extends Forwarded {}

// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the interface is the forwarded verbs, which the static block below defines on the prototype from the operation table
export class DurableCatalog implements Catalog {
  private readonly wire: WireOptions;

  constructor(
    private readonly ns: CatalogNamespace,
    options: CatalogOptions = {},
  ) {
    this.wire = {
      graceMs: options.garbageGraceMs ?? DEFAULT_GARBAGE_GRACE_MS,
      maxVersions: options.maxVersionsPerKey ?? DEFAULT_MAX_VERSIONS_PER_KEY,
    };
  }

  static {
    for (const [name, op] of Object.entries(OPERATIONS) as [OperationName, Operation<never>][]) {
      if (op.own || op.internal) continue;
      Object.defineProperty(DurableCatalog.prototype, name, {
        value: async function (this: DurableCatalog, ...args: unknown[]) {
          return await this.verb(name, args);
        },
        writable: true,
        configurable: true,
      });
    }
  }

  /** A port verb by its row: its arguments turned, sent, its Reply unwrapped. */
  private async verb(name: OperationName, args: unknown[]): Promise<unknown> {
    const op = operation(name)!;
    const sent = op.wire ? (op.wire as (o: WireOptions, a: unknown[]) => unknown[])(this.wire, args) : args;
    const answer = await this.send(name, sent, undefined, op.to === 'key' ? keyOf(op, args) : undefined);
    return op.bare ? answer : unwrap(answer as Reply<unknown>);
  }

  /**
   * Sends operation `name` with `args` (as the object takes them) to the instance its route
   * names (or `to`; a `key` route by `key`, the port's key: a call without it is a bug, refused
   * here rather than sent where a split bucket would not hold the key), and answers what the
   * object answers. A fenced operation, inside a request
   * whose fence covers the bucket, carries the stamp the request was checked against; an
   * instance holding other settings does nothing and answers them: the request is checked again
   * (AccessDenied throws) and the call repeated with the new stamp. Settings changing on every
   * try fail the request (503).
   */
  private async send(name: OperationName, args: unknown[], to?: Route, key?: unknown): Promise<unknown> {
    const op = operation(name)!;
    const route = to ?? op.to;
    if (route === 'key' && typeof key !== 'string') throw new Error(`catalog: ${name} was called without the key it is routed by`);
    const stub = this.ns.get(this.ns.idFromName(instanceFor(route, args, key as string | undefined)));
    const bucket = args[0] as string;
    const fence = op.fenced && IN_BUCKET.has(route) ? requestFence.getStore() : undefined;
    let stamp = fence?.stampFor(bucket);
    if (fence === undefined || stamp === undefined) return await dispatch(stub, name, args);
    for (let attempt = 0; attempt < FENCED_ATTEMPTS; attempt++) {
      const r = (await dispatch(stub, name, args, stamp)) as Fenced<unknown>;
      if (r.stale === undefined) return r.ran;
      this.saw(bucket, r.stale);
      await fence.changed(bucket, r.stale);
      stamp = fence.stampFor(bucket) ?? r.stale.stamp;
    }
    throw new S3Error('ServiceUnavailable', `The settings of bucket ${bucket} changed during the request; please retry.`);
  }

  /** The request-path settings this isolate last saw, by bucket (absent: none). Bounded. */
  private readonly seen = new Map<string, BucketSettings>();

  /** This isolate's view of the bucket's request-path settings: no call (model/bucket-settings.ts). */
  cachedBucketSettings(bucket: string): BucketSettings {
    return this.seen.get(bucket) ?? NO_SETTINGS;
  }

  /** The bucket's request-path settings as its instance holds them now (one call). NoSuchBucket. */
  async getBucketSettings(bucket: string): Promise<BucketSettings> {
    return this.saw(bucket, unwrap((await this.send('getBucketSettings', [bucket])) as Reply<BucketSettings>));
  }

  /** The instance answers the settings with their new stamp: this isolate sees the change at once. */
  async setBucketPolicy(bucket: string, policy: string | null, isPublic = false): Promise<void> {
    this.saw(bucket, unwrap((await this.send('setBucketPolicy', [bucket, policy, isPublic])) as Reply<BucketSettings>));
  }

  /** As setBucketPolicy: the public access block is a request-path setting. */
  async setBucketPublicAccessBlock(bucket: string, value: string | null): Promise<void> {
    this.saw(bucket, unwrap((await this.send('setBucketPublicAccessBlock', [bucket, value])) as Reply<BucketSettings>));
  }

  private saw(bucket: string, settings: BucketSettings): BucketSettings {
    this.seen.delete(bucket); // re-inserted last: the oldest goes first when full
    if (settings.stamp !== '') {
      if (this.seen.size >= SETTINGS_SEEN_MAX) this.seen.delete(this.seen.keys().next().value!);
      this.seen.set(bucket, settings);
    }
    return settings;
  }

  /**
   * Registers the name (BucketAlreadyOwnedByYou if taken), then initialises its instance.
   * Gap: if the second step never happens, the bucket is listed but its object requests answer
   * NoSuchBucket; deleteBucket then createBucket repairs it.
   */
  async insertBucket(bucket: string, region: string, options: { objectLock?: boolean } = {}): Promise<void> {
    const created = Date.now();
    unwrap((await this.send('registerBucket', [bucket, region, created])) as Reply<void>);
    await this.send('initBucket', [bucket, region, created, options.objectLock ?? false]);
  }

  /**
   * From the bucket list; inside a request whose fence covers the bucket, from the bucket's own
   * instance (the same record, and the call carries the request's settings stamp): the two differ
   * only in creation's and deletion's gaps (above), where the instance answers NoSuchBucket as it
   * does for object requests.
   */
  async getBucket(bucket: string): Promise<S.BucketInfo> {
    const fenced = requestFence.getStore()?.stampFor(bucket) !== undefined;
    return unwrap((await this.send('getBucket', [bucket], fenced ? 'root' : 'registry')) as Reply<S.BucketInfo>);
  }

  /**
   * The bucket's instance checks it is empty (objects and uploads) and ends the bucket in one
   * transaction, so no write can slip in after the check; then the name leaves the list, together
   * with the instance's pending garbage, and the instance frees its storage.
   * Gap: between the first and second step the bucket is still listed (HeadBucket succeeds) while
   * object requests answer NoSuchBucket; a retried deleteBucket completes it (each step is idempotent).
   * A crash before the last step leaves only storage that a later createBucket reuses.
   */
  async removeBucket(bucket: string): Promise<void> {
    unwrap((await this.send('getBucket', [bucket], 'registry')) as Reply<S.BucketInfo>);
    const garbage = unwrap((await this.send('retireBucket', [bucket])) as Reply<GarbageRow[]>);
    await this.send('unregisterBucket', [bucket, garbage]);
    await this.send('destroyIfRetired', [bucket]);
  }

  /** Into the bucket's instance; if the bucket is gone, into the bucket list's (the units still exist). */
  async queueGarbage(garbage: GarbageUnits, notBefore: Date): Promise<void> {
    const r = (await this.send('queueGarbage', [garbage, notBefore.getTime()])) as Reply<void>;
    if (r.error?.code === 'NoSuchBucket') await this.send('queueOrphanGarbage', [garbage, notBefore.getTime()]);
    else unwrap(r);
  }

  /** The bucket list's garbage (deleted buckets'), then each bucket's, until `limit`. */
  async takeDueGarbage(now: Date, limit: number): Promise<GarbageUnits[]> {
    if (limit <= 0) return [];
    const taken = (await this.send('takeDueGarbage', [now.getTime(), limit])) as GarbageUnits[];
    for (const b of await this.listBucketRecords()) {
      if (taken.length >= limit) break;
      taken.push(...((await this.send('takeDueGarbage', [now.getTime(), limit - taken.length, b.name])) as GarbageUnits[]));
    }
    return taken;
  }

  async journalInstances(): Promise<string[]> {
    return [BUCKET_LIST_INSTANCE, ...(await this.listBucketRecords()).map((b) => b.name)];
  }
}
