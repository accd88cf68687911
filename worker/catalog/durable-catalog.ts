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
import { newestEvents, sumEventStatus } from './sql-outbox.ts';
import type { DestinationEvents, EventEntry } from './types.ts';
import type * as S from '../model/object-store.ts';
import { DEFAULT_GARBAGE_GRACE_MS, DEFAULT_MAX_VERSIONS_PER_KEY, type CatalogOptions } from './rules.ts';
import { unwrap, type Fenced, type Reply } from './rpc.ts';
import { OPERATIONS, keyOf, operation, type CatalogEntry, type Operation, type OperationName, type WireOptions } from './operations.ts';
import { bucketInstance, IN_BUCKET, instanceFor, partitionJournal, type Route } from './routing.ts';
import { isMoved, onePartition, ownedRange, ownerOf, type Moved, type PartitionMap } from './partition-map.ts';
import { isSpread, sealOwner, SPREAD, walkPartitions, walkSeals, WALKS, type WalkName } from './partition-walk.ts';
import { sumHealth } from './health-sum.ts';
import { sumUsage, type BucketUsage } from './quota.ts';
import { rebalanceQuota } from './quota-set.ts';
import { NO_SETTINGS, requestFence, type BucketSettings } from '../model/bucket-settings.ts';
import { ownerRow } from '../model/account.ts';
import { S3Error } from '../model/errors.ts';
import { errorMessage } from '../model/error-message.ts';
import type { CatalogObject } from './durable-object.ts';
import type { BucketHealth, GarbageUnits, PartitionFigures, SealRecordCursor, UnitRecord } from './types.ts';
import type { PartitionStats, SplitStop } from './sql-split.ts';
import type { GarbageRow } from './sql-schema.ts';
import { BUCKET_LIST_INSTANCE } from '../format/journal.ts';
import type { ObjectManifest } from '../format/manifest.ts';
import { eventOrigin } from '../model/event-origin.ts';

/** Buckets whose settings an isolate keeps (others cost a repeated call when they have some). */
const SETTINGS_SEEN_MAX = 4096;
/** Fenced tries of one call before the request fails (each answered with newer settings). */
const FENCED_ATTEMPTS = 3;
/** Tries of one call answered Moved (each after reading the map again) before the request fails. */
const MOVED_ATTEMPTS = 4;

/** Sets `key` in `map` as its newest entry; the oldest goes when SETTINGS_SEEN_MAX are held (a Map keeps insertion order). */
function keepNewest<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  if (map.size >= SETTINGS_SEEN_MAX) map.delete(map.keys().next().value!);
  map.set(key, value);
}

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
async function dispatch(stub: CatalogEntry, name: string, args: unknown[], stamp?: string, via?: Via): Promise<unknown> {
  try {
    if (via !== undefined) return await stub.dispatch(name, args, stamp, via);
    return await (stamp === undefined ? stub.dispatch(name, args) : stub.dispatch(name, args, stamp));
  } catch (err) {
    if (!NO_DISPATCH.test(errorMessage(err))) throw err;
    const older = stub as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
    return await (stamp === undefined ? older[name]!(...args) : older.fenced!(stamp, name, args));
  }
}

/** How a call inside a split bucket was routed: the map's epoch, and the key it was routed by. */
type Via = { key?: string; epoch: number };

type Table = typeof OPERATIONS;
/** The port verbs the table forwards (rows with a port, not `own`). */
export type ForwardedName = { [K in OperationName]: Table[K] extends { own: true } ? never : Table[K] extends { port: string } ? K : never }[OperationName];
/** A Reply's value (rpc.ts); a `bare` method's answer as is. */
type ReplyValue<R> = [R] extends [Reply<unknown>] ? Extract<R, { ok: unknown }>['ok'] : R;
/** A forwarded verb's answer: its method's, out of its Reply unless the row is `bare`. */
export type VerbAnswer<K extends ForwardedName> = Table[K] extends { bare: true }
  ? Awaited<ReturnType<CatalogObject[K]>>
  : ReplyValue<Awaited<ReturnType<CatalogObject[K]>>>;
/** A forwarded verb's parameters: its row's `wire` parameters, else its method's. */
export type VerbArgs<K extends ForwardedName> = Table[K] extends { wire: (o: never, a: infer A extends unknown[]) => unknown }
  ? A
  : Parameters<CatalogObject[K]>;
/**
 * The forwarded verbs as a gateway calls them, derived from their methods and rows (mapped over
 * the methods, so each keeps its method's doc comment: the verb's contract).
 */
type Forwarded = { [K in keyof Pick<CatalogObject, ForwardedName>]: (...args: VerbArgs<K>) => Promise<VerbAnswer<K>> };

// The forwarded verbs are DurableCatalog's methods (put on its prototype from the table below).
export interface DurableCatalog extends Forwarded {}

// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the interface is the forwarded verbs, which the static block below defines on the prototype from the operation table
export class DurableCatalog {
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
    for (const [name, op] of Object.entries(OPERATIONS) as [OperationName, Operation][]) {
      if (op.own || !op.port) continue;
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
    if (op.to === 'walk' || op.to === 'sum' || isSpread(name) || name === 'listSealRecords') return await this.across(name, sent);
    const answer = await this.send(name, sent, undefined, op.to === 'key' ? keyOf(op, args) : undefined);
    return op.bare ? answer : unwrap(answer as Reply<unknown>);
  }

  /**
   * Sends operation `name` with `args` (as the object takes them) to the instance its route
   * names (or `to`); a `key` route goes to the partition holding `key` by this isolate's map of
   * the bucket (a call without its key is a bug, refused here rather than sent where a split
   * bucket would not hold the key), and an instance that no longer holds it answers Moved: the map
   * is read again from the root and the call repeated.
   */
  private async send(name: OperationName, args: unknown[], to?: Route, key?: unknown): Promise<unknown> {
    const op = operation(name)!;
    const route = to ?? op.to;
    if (route !== 'key') return await this.call(instanceFor(route, args), name, args, undefined, route);
    if (typeof key !== 'string') throw new Error(`catalog: ${name} was called without the key it is routed by`);
    const bucket = args[0] as string;
    for (let attempt = 0; ; attempt++) {
      const map = this.mapOf(bucket);
      const answer = await this.call(ownerOf(map, key), name, args, { key, epoch: map.epoch });
      if (!isMoved(answer)) return answer;
      await this.movedOn(bucket, attempt);
    }
  }

  /**
   * One call to `instance`. A fenced operation, inside a request whose fence covers the bucket,
   * carries the stamp the request was checked against; an instance holding other settings does
   * nothing and answers them: the request is checked again (AccessDenied throws) and the call
   * repeated with the new stamp. Settings changing on every try fail the request (503). A Moved
   * answer is the caller's.
   */
  private async call(instance: string, name: OperationName, args: unknown[], via?: Via, route: Route = operation(name)!.to): Promise<unknown> {
    const op = operation(name)!;
    const stub = this.ns.get(this.ns.idFromName(instance));
    const bucket = args[0] as string;
    const fence = op.fenced && IN_BUCKET.has(route) ? requestFence.getStore() : undefined;
    let stamp = fence?.stampFor(bucket);
    if (fence === undefined || stamp === undefined) return await dispatch(stub, name, args, undefined, via);
    for (let attempt = 0; attempt < FENCED_ATTEMPTS; attempt++) {
      const r = (await dispatch(stub, name, args, stamp, via)) as Fenced<unknown> | Moved;
      if (isMoved(r)) return r;
      if (r.stale === undefined) return r.ran;
      this.saw(bucket, r.stale);
      await fence.changed(bucket, r.stale);
      stamp = fence.stampFor(bucket) ?? r.stale.stamp;
    }
    throw new S3Error('ServiceUnavailable', `The settings of bucket ${bucket} changed during the request; please retry.`);
  }

  // ---- Partitions (docs/PARTITIONS.md) ----

  /** The partition maps this isolate last saw, by bucket (absent: one partition, the root). Bounded. */
  private readonly maps = new Map<string, PartitionMap>();

  private mapOf(bucket: string): PartitionMap {
    return this.maps.get(bucket) ?? onePartition(bucketInstance(bucket));
  }

  /** A call was answered Moved: the map again from the root, or 503 once MOVED_ATTEMPTS are spent. */
  private async movedOn(bucket: string, attempt: number): Promise<void> {
    if (attempt + 1 >= MOVED_ATTEMPTS) {
      throw new S3Error('ServiceUnavailable', `The partitions of bucket ${bucket} changed during the request; please retry.`);
    }
    await this.getPartitionMap(bucket);
  }

  /** The bucket's partition map (one partition until it is split). NoSuchBucket. */
  async getPartitionMap(bucket: string): Promise<PartitionMap> {
    const map = unwrap((await this.call(bucketInstance(bucket), 'getPartitionMap', [bucket])) as Reply<PartitionMap>);
    keepNewest(this.maps, bucket, map);
    return map;
  }

  /**
   * Cuts an empty bucket that never split into ranges at `boundaries` (each a new partition's
   * first key); BucketNotEmpty if it holds anything. For tests and operators who know a bucket's
   * key space before they fill it. Idempotent: plan at the root, make each partition, commit at
   * the root (partition-map.ts); a retry resumes the plan.
   */
  async splitBucketStatically(bucket: string, boundaries: string[]): Promise<PartitionMap> {
    const root = bucketInstance(bucket);
    const plan = unwrap(
      (await this.call(root, 'planStaticSplit', [bucket, boundaries])) as Reply<{ map: PartitionMap; region: string; created: number; mirror: unknown }>,
    );
    for (let i = 1; i < plan.map.ranges.length; i++) {
      await this.call(plan.map.ranges[i]!.instance, 'initPartition', [bucket, plan.region, plan.created, ownedRange(plan.map, i), plan.mirror]);
    }
    unwrap((await this.call(root, 'commitStaticSplit', [bucket])) as Reply<PartitionMap>);
    const map = await this.getPartitionMap(bucket);
    // A quota set before the split is cut into the partitions' shares (quota.ts); until then they refuse growth.
    await rebalanceQuota(this, bucket, Date.now());
    return map;
  }

  /** Each partition of the bucket with its range and figures (what the split thresholds are compared with). */
  async partitionsOf(bucket: string): Promise<PartitionFigures[]> {
    const map = await this.getPartitionMap(bucket);
    return await Promise.all(
      map.ranges.map(async (r, i) => ({
        instance: r.instance,
        low: r.low,
        high: map.ranges[i + 1]?.low ?? null,
        ...unwrap((await this.call(r.instance, 'partitionStats', [bucket])) as Reply<PartitionStats>),
      })),
    );
  }

  /**
   * Splits the partition holding `key` at `at` (absent: at its median key) while it goes on
   * answering (docs/PARTITIONS.md "Splits on line"), and answers the new map. InvalidRequest when
   * the partition holds fewer than two keys; SlowDown while writes of an earlier release are in
   * flight there. `stopAfter` (tests) abandons the split where a crash would: null is answered.
   */
  async splitPartition(bucket: string, key: string, at?: string, stopAfter?: SplitStop): Promise<PartitionMap | null> {
    const map = unwrap((await this.send('splitPartition', [bucket, key, at, stopAfter], undefined, key)) as Reply<PartitionMap | null>);
    if (map !== null) keepNewest(this.maps, bucket, map);
    return map;
  }

  /**
   * A bulk load: each item committed as commitManifest commits it, a transaction per partition
   * and call (the items grouped by the map). Items of one call are committed or refused
   * together per partition; a refusal (QuotaExceeded, PreconditionFailed) throws and leaves the
   * partitions already written as they are. For loads of many keys (issue 39's scale proof).
   */
  async commitManifests(bucket: string, items: { key: string; manifest: ObjectManifest; conditions: S.WriteConditions }[]): Promise<void> {
    let rest = items.map((i) => ({ ...i, conditions: { ...i.conditions, maxVersions: this.wire.maxVersions } }));
    for (let attempt = 0; rest.length; attempt++) {
      const map = this.mapOf(bucket);
      const byOwner = new Map<string, typeof rest>();
      for (const item of rest) {
        const owner = ownerOf(map, item.key);
        byOwner.set(owner, [...(byOwner.get(owner) ?? []), item]);
      }
      const moved: typeof rest = [];
      for (const [instance, batch] of byOwner) {
        const answer = await this.call(instance, 'commitManifests', [bucket, batch, this.wire.graceMs, eventOrigin()], { epoch: map.epoch });
        if (isMoved(answer)) moved.push(...batch);
        else unwrap(answer as Reply<unknown>);
      }
      rest = moved;
      if (rest.length) await this.movedOn(bucket, attempt);
    }
  }

  /**
   * Merges the partition holding `key` into its lower neighbour while both go on answering
   * (docs/PARTITIONS.md "Merges"), and answers the new map. InvalidRequest for the bucket's first
   * partition; SlowDown while events of the partition wait for delivery (the merge is given up,
   * nothing changed); OperationAborted when either partition is splitting or merging. `stopAfter`
   * as for splitPartition.
   */
  async mergePartition(bucket: string, key: string, stopAfter?: SplitStop): Promise<PartitionMap | null> {
    const map = unwrap((await this.send('mergePartition', [bucket, key, stopAfter], undefined, key)) as Reply<PartitionMap | null>);
    if (map !== null) keepNewest(this.maps, bucket, map);
    return map;
  }

  /**
   * A `walk` (a listing in key order) or a `sum` (a figure of every partition) over the bucket's
   * partitions, by this isolate's map; a Moved answer anywhere starts it again on the new map.
   */
  private async across(name: OperationName, args: unknown[]): Promise<unknown> {
    const op = operation(name)!;
    const bucket = args[0] as string;
    for (let attempt = 0; ; attempt++) {
      const map = this.mapOf(bucket);
      const answer =
        map.ranges.length === 1
          ? await this.call(map.ranges[0]!.instance, name, args, { epoch: map.epoch })
          : name === 'listSealRecords'
            ? await walkSeals(args, map, (instance, a, via) => this.call(instance, name, a, via))
            : name === 'replaceSealRecords'
              ? await this.replaceSeals(args, map)
              : op.to === 'sum' || isSpread(name)
                ? await this.sum(name, args, map)
                : await walkPartitions(WALKS[name as WalkName], args, map, (instance, a, via) => this.call(instance, name, a, via));
      if (!isMoved(answer)) return op.bare ? answer : unwrap(answer as Reply<unknown>);
      await this.movedOn(bucket, attempt);
    }
  }

  /** Each replacement to the partition holding its record; the count replaced, summed. */
  private async replaceSeals(args: unknown[], map: PartitionMap): Promise<unknown> {
    const [bucket, items] = args as [string, { at: SealRecordCursor }[]];
    const byPartition = new Map<number, typeof items>();
    for (const item of items) byPartition.set(sealOwner(map, item.at), [...(byPartition.get(sealOwner(map, item.at)) ?? []), item]);
    let replaced = 0;
    for (const [i, part] of byPartition) {
      const answer = await this.call(map.ranges[i]!.instance, 'replaceSealRecords', [bucket, part], { epoch: map.epoch });
      if (isMoved(answer)) return answer;
      replaced += unwrap(answer as Reply<number>);
    }
    return { ok: replaced };
  }

  private async sum(name: OperationName, args: unknown[], map: PartitionMap): Promise<unknown> {
    const to = isSpread(name) && SPREAD[name] === 'root' ? map.ranges.slice(0, 1) : map.ranges;
    const answers = await Promise.all(to.map((r) => this.call(r.instance, name, args, { epoch: map.epoch })));
    const moved = answers.find(isMoved);
    if (moved) return moved;
    const values = answers.map((a) => unwrap(a as Reply<unknown>));
    if (name === 'bucketHealth') return { ok: sumHealth(values as [BucketHealth, ...BucketHealth[]]) };
    if (name === 'bucketUsage') return { ok: sumUsage(values as [BucketUsage, ...BucketUsage[]]) };
    if (name === 'pendingUnitIds') return { ok: (values as string[][]).flat() };
    if (name === 'eventStatus') return { ok: sumEventStatus(values as DestinationEvents[][]) };
    if (name === 'listEvents') return { ok: newestEvents(values as EventEntry[][], args[1] as number) };
    if (name === 'listUnits') {
      const limit = args[2] as number;
      return {
        ok: (values as UnitRecord[][])
          .flat()
          .sort((a, b) => (a.unitId < b.unitId ? -1 : a.unitId > b.unitId ? 1 : 0))
          .slice(0, limit),
      };
    }
    if (isSpread(name)) return { ok: values[0] };
    throw new Error(`catalog: no sum for ${name}`);
  }

  /** The request-path settings this isolate last saw, by bucket (absent: none). Bounded. */
  private readonly seen = new Map<string, BucketSettings>();

  /** This isolate's view of the bucket's request-path settings (model/bucket-settings.ts): no call. */
  cachedBucketSettings(bucket: string): BucketSettings {
    return this.seen.get(bucket) ?? NO_SETTINGS;
  }

  /** The bucket's request-path settings as its instance holds them now (one call; this isolate's view is updated). NoSuchBucket. */
  async getBucketSettings(bucket: string): Promise<BucketSettings> {
    return this.saw(bucket, unwrap((await this.send('getBucketSettings', [bucket])) as Reply<BucketSettings>));
  }

  /**
   * Replaces the bucket policy (already validated); null removes it. `isPublic` (the caller's
   * judgment, policy-eval.ts): AccessDenied when the bucket's public access block has
   * BlockPublicPolicy, checked in the write's transaction. NoSuchBucket if missing.
   *
   * The instance answers the settings with their new stamp: this isolate sees the change at once.
   */
  async setBucketPolicy(bucket: string, policy: string | null, isPublic = false): Promise<void> {
    this.saw(bucket, unwrap((await this.send('setBucketPolicy', [bucket, policy, isPublic])) as Reply<BucketSettings>));
  }

  /**
   * Replaces it; null removes it. NoSuchBucket if missing.
   *
   * As setBucketPolicy: the public access block is a request-path setting.
   */
  async setBucketPublicAccessBlock(bucket: string, value: string | null): Promise<void> {
    this.saw(bucket, unwrap((await this.send('setBucketPublicAccessBlock', [bucket, value])) as Reply<BucketSettings>));
  }

  /**
   * Changes the Object Ownership and ACL rows (model/acl.ts; a field left out stays, null removes
   * it): request-path settings, as setBucketPolicy. InvalidBucketAclWithObjectOwnership /
   * AccessControlListNotSupported when the result would be grants on an owner-enforced bucket.
   */
  async setBucketAccess(bucket: string, change: { ownership?: string | null; acl?: string | null }): Promise<void> {
    this.saw(bucket, unwrap((await this.send('setBucketAccess', [bucket, change])) as Reply<BucketSettings>));
  }

  /**
   * Replaces the default encryption (model/default-encryption.ts JSON; null removes it): a request-path setting.
   *
   * As setBucketPolicy: the default encryption is a request-path setting.
   */
  async setBucketEncryption(bucket: string, value: string | null): Promise<void> {
    this.saw(bucket, unwrap((await this.send('setBucketEncryption', [bucket, value])) as Reply<BucketSettings>));
  }

  private saw(bucket: string, settings: BucketSettings): BucketSettings {
    if (settings.stamp !== '') keepNewest(this.seen, bucket, settings);
    else this.seen.delete(bucket);
    return settings;
  }

  /**
   * Creates the bucket; BucketAlreadyOwnedByYou if it exists (whoever owns it: the caller compares
   * owners, s3/buckets.ts). `objectLock`: created with Object Lock enabled (versioning Enabled,
   * which can then never be Suspended). `owner`: the creating key's account (model/account.ts;
   * absent: the default account).
   * Registers the name (BucketAlreadyOwnedByYou if taken), then initialises its instance.
   * Gap: if the second step never happens, the bucket is listed but its object requests answer
   * NoSuchBucket; deleteBucket then createBucket repairs it.
   */
  async insertBucket(
    bucket: string,
    region: string,
    options: { objectLock?: boolean; owner?: string; ownership?: string | null; acl?: string | null } = {},
  ): Promise<void> {
    const created = Date.now();
    unwrap((await this.send('registerBucket', [bucket, region, created])) as Reply<void>);
    const access = { ownership: options.ownership ?? null, acl: options.acl ?? null };
    await this.send('initBucket', [bucket, region, created, options.objectLock ?? false, ownerRow(options.owner), access]);
  }

  /**
   * NoSuchBucket if missing.
   *
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
   * BucketNotEmpty while it holds objects or multipart uploads; NoSuchBucket if missing.
   *
   * The bucket's instance checks it is empty (objects and uploads) and ends the bucket in one
   * transaction, so no write can slip in after the check; then the name leaves the list, together
   * with the instance's pending garbage, and the instance frees its storage.
   * Gap: between the first and second step the bucket is still listed (HeadBucket succeeds) while
   * object requests answer NoSuchBucket; a retried deleteBucket completes it (each step is idempotent).
   * A crash before the last step leaves only storage that a later createBucket reuses.
   */
  async removeBucket(bucket: string): Promise<void> {
    unwrap((await this.send('getBucket', [bucket], 'registry')) as Reply<S.BucketInfo>);
    const map = await this.getPartitionMap(bucket);
    // Partitions merged away hold nothing but go with the bucket too (their journals, their rows).
    const parts = [...map.ranges.slice(1).map((r) => r.instance), ...(map.retired ?? [])];
    const garbage: GarbageRow[] = [];
    if (parts.length) {
      // A split bucket: its partitions refuse writes while each is asked whether it is empty,
      // so no write slips in between the checks (partition-mirror.ts RETIRING).
      const root = bucketInstance(bucket);
      unwrap((await this.call(root, 'setRetiring', [bucket, true])) as Reply<void>);
      try {
        for (const instance of [root, ...parts]) {
          if (unwrap((await this.call(instance, 'holdsObjects', [bucket])) as Reply<boolean>))
            throw new S3Error('BucketNotEmpty', undefined, { BucketName: bucket });
        }
      } catch (err) {
        unwrap((await this.call(root, 'setRetiring', [bucket, false])) as Reply<void>);
        throw err;
      }
      for (const instance of parts) garbage.push(...unwrap((await this.call(instance, 'retireBucket', [bucket])) as Reply<GarbageRow[]>));
    }
    garbage.push(...unwrap((await this.send('retireBucket', [bucket])) as Reply<GarbageRow[]>));
    await this.send('unregisterBucket', [bucket, garbage]);
    for (const instance of parts) await this.call(instance, 'destroyIfRetired', [bucket]);
    await this.send('destroyIfRetired', [bucket]);
    this.maps.delete(bucket);
  }

  /**
   * Queues units whose shards must be deleted once `notBefore` has passed (crash leftovers, failed writes).
   *
   * Into the bucket's instance; if the bucket is gone, into the bucket list's (the units still exist).
   */
  async queueGarbage(garbage: GarbageUnits, notBefore: Date): Promise<void> {
    const r = (await this.send('queueGarbage', [garbage, notBefore.getTime()])) as Reply<void>;
    if (r.error?.code === 'NoSuchBucket') await this.send('queueOrphanGarbage', [garbage, notBefore.getTime()]);
    else unwrap(r);
  }

  /**
   * Takes (removes and returns) up to `limit` garbage entries due at `now`, expired reservations included.
   *
   * The bucket list's garbage (deleted buckets'), then each bucket's, until `limit`.
   */
  async takeDueGarbage(now: Date, limit: number): Promise<GarbageUnits[]> {
    if (limit <= 0) return [];
    const taken = (await this.send('takeDueGarbage', [now.getTime(), limit])) as GarbageUnits[];
    for (const b of await this.listBucketRecords()) {
      // The bucket's root, then its partitions (each queues the garbage of its own commits), by
      // this isolate's map: the root answers Moved (taking nothing) when its bucket was split
      // since, and the take is repeated over the new map.
      for (let attempt = 0; taken.length < limit; attempt++) {
        const map = this.mapOf(b.name);
        const got: GarbageUnits[] = [];
        let moved = false;
        for (const r of map.ranges) {
          if (taken.length + got.length >= limit) break;
          const answer = await this.call(
            r.instance,
            'takeDueGarbage',
            [now.getTime(), limit - taken.length - got.length, b.name],
            { epoch: map.epoch },
            'sweep',
          );
          if (isMoved(answer)) {
            moved = true;
            break;
          }
          got.push(...(answer as GarbageUnits[]));
        }
        taken.push(...got);
        if (!moved || attempt + 1 >= MOVED_ATTEMPTS) break;
        await this.getPartitionMap(b.name).catch(() => undefined);
      }
      if (taken.length >= limit) break;
    }
    return taken;
  }

  /** Every journal instance: the bucket list's, then each bucket's (its root's) and its partitions' (docs/PARTITIONS.md), retired ones included. */
  async journalInstances(): Promise<string[]> {
    const out = [BUCKET_LIST_INSTANCE];
    for (const b of await this.listBucketRecords()) {
      out.push(b.name);
      // Read from the root each run (upkeep, not a request): a cached map could miss a partition.
      const map = await this.getPartitionMap(b.name).catch(() => undefined);
      for (const r of map?.ranges.slice(1) ?? []) out.push(partitionJournal(r.instance));
      // A partition merged away keeps its journal (it records the partition emptied): kept up, and known to the loss look.
      for (const instance of map?.retired ?? []) out.push(partitionJournal(instance));
    }
    return out;
  }
}

// The operation table (operations.ts cannot import durable-object.ts: a cycle) agrees with the
// methods: every row is a CatalogObject method; a forwarded verb's row sends the method its arguments as it takes
// them (a `wire` turns the parameters it annotates into them, and annotates something: no `any`),
// and a `key` row's key function reads those parameters. The verbs' types are derived from these
// (durable-catalog.ts Forwarded); composites (`own`) and rows without a port are DurableCatalog's
// to get right.
type IsAny<T> = 0 extends 1 & T ? true : false;
type Disagrees<K extends keyof Table> = K extends keyof CatalogObject
  ? K extends ForwardedName
    ? Table[K] extends { wire: (o: never, a: never) => infer W }
      ? [W] extends [Parameters<CatalogObject[K]>]
        ? IsAny<VerbArgs<K>> extends true
          ? `${K}: wire parameters not annotated`
          : KeyReads<K>
        : `${K}: wire arguments`
      : KeyReads<K>
    : never
  : `${K}: no method`;
type KeyReads<K extends ForwardedName> = Table[K] extends { key: (a: infer A) => string } ? ([VerbArgs<K>] extends [A] ? never : `${K}: key`) : never;
const agreed: [Disagrees<keyof Table>] extends [never] ? true : Disagrees<keyof Table> = true;
void agreed;
