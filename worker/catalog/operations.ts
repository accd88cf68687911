/**
 * The catalog's one operation table: every operation a CatalogObject answers, by name (the name
 * of its method, durable-object.ts), and how a gateway calls it:
 * - `to`: the route (routing.ts): the operation's scope (the bucket list, a bucket's root, one
 *   key, a walk in key order, one instance's upkeep state, a sum), and so which instance its
 *   arguments name; a `key` row routes by its key (`key`: where it is, when not the second argument);
 * - `fenced`: a request-path operation, which carries the settings stamp its request was checked
 *   against (model/bucket-settings.ts) and is refused by an instance whose settings changed. Not
 *   fenced: what cleans up or records after the fact (releaseUnits, queueGarbage, the repair
 *   worklist, upkeep's calls), which must not be refused because a policy changed meanwhile;
 * - `bare`: the method answers its value as is; otherwise a Reply (rpc.ts), S3 errors as data;
 * - `wire`: the port's arguments (types.ts) as the method takes them, when they differ (a Date
 *   sent as ms, the client's garbage grace and version cap added);
 * - `own`: DurableCatalog writes the port verb itself (it spans calls or keeps state) and sends
 *   this operation from there, with the method's arguments; `internal`: no port verb of that
 *   name, only such a composite sends it.
 * CatalogObject.dispatch runs by this table and DurableCatalog forwards every other port verb
 * from it, so a new verb is its SQL (the CatalogObject method over sql-*.ts), its row here and
 * its declaration in the port its consumer takes (types.ts): no forwarder, no list of fenced
 * names. durable-object.ts checks that rows, methods and ports agree (this file cannot import
 * it: a cycle).
 * Known gap: the ports are still declared by hand (issue 39 wants them derived from here).
 */
import type { Route } from './routing.ts';
import type { Catalog } from './types.ts';
import { eventOrigin } from '../model/event-origin.ts';

/** What the client adds to the port's arguments. */
export interface WireOptions {
  /** Milliseconds before superseded units may be deleted (rules.ts DEFAULT_GARBAGE_GRACE_MS). */
  graceMs: number;
  /** Versions kept per key (rules.ts DEFAULT_MAX_VERSIONS_PER_KEY). */
  maxVersions: number;
}

export interface Operation<A = never> {
  to: Route;
  /** A `key` route's key among the arguments (the port's), when it is not the second. */
  key?: (args: A) => string;
  fenced?: true;
  bare?: true;
  own?: true;
  internal?: true;
  wire?: (o: WireOptions, args: A) => [] | unknown[];
}

/** A CatalogObject as a gateway reaches it: its one entry point (durable-object.ts dispatch). */
export interface CatalogEntry {
  /** `route`: how a call inside a split bucket was routed (partition-map.ts: Moved when stale). */
  dispatch(name: string, args: unknown[], stamp?: string, route?: { key?: string; epoch: number }): Promise<unknown>;
}

/** Operations with no port verb of their name (DurableCatalog's composites send them). */
type InternalName =
  | 'registerBucket'
  | 'unregisterBucket'
  | 'queueOrphanGarbage'
  | 'initBucket'
  | 'retireBucket'
  | 'destroyIfRetired'
  | 'planStaticSplit'
  | 'initPartition'
  | 'commitStaticSplit'
  | 'adoptMirror'
  | 'setRetiring'
  | 'holdsObjects'
  | 'allocatePartition'
  | 'commitPartitionSplit'
  | 'receiveSplitRows'
  | 'splitCommitted'
  | 'raisePartitionEpoch'
  | 'partitionStats'
  | 'commitPartitionMerge'
  | 'beginMergeIn'
  | 'receiveMergeRows'
  | 'receiveMergeGarbage'
  | 'mergeCommitting'
  | 'abortMergeIn'
  | 'applyMerge';

type Table = { [K in keyof Catalog | InternalName]?: Operation<K extends keyof Catalog ? Parameters<Catalog[K]> : never> };

export const OPERATIONS = {
  // ---- The bucket list (routing.ts BUCKET_LIST) ----
  listBucketRecords: { to: 'registry', bare: true },
  registerBucket: { to: 'registry', internal: true },
  unregisterBucket: { to: 'registry', bare: true, internal: true },
  queueOrphanGarbage: { to: 'registry', bare: true, internal: true },
  catalogLoss: { to: 'registry', bare: true },
  setCatalogLoss: { to: 'registry', bare: true },
  deletedBucketGarbage: { to: 'registry', bare: true, wire: (_, [now]) => [now.getTime()] },
  /** The key table of named KMS keys (sql-kms-keys.ts). */
  listKmsKeys: { to: 'registry', bare: true },
  getKmsKey: { to: 'registry', bare: true },
  replaceKmsKey: { to: 'registry', bare: true },

  // ---- A bucket's life and settings ----
  /** From the bucket list, or (fenced) from the bucket's instance: DurableCatalog.getBucket. */
  getBucket: { to: 'root', fenced: true, own: true },
  initBucket: { to: 'root', bare: true, internal: true },
  retireBucket: { to: 'root', fenced: true, internal: true },
  destroyIfRetired: { to: 'root', bare: true, internal: true },
  getBucketSettings: { to: 'root', own: true },
  getBucketPolicy: { to: 'root' },
  setBucketPolicy: { to: 'root', own: true },
  getBucketPublicAccessBlock: { to: 'root' },
  setBucketPublicAccessBlock: { to: 'root', own: true },
  setBucketEncryption: { to: 'root', own: true },
  getBucketCors: { to: 'root', fenced: true },
  setBucketCors: { to: 'root', fenced: true },
  getBucketTagging: { to: 'root', fenced: true },
  setBucketTagging: { to: 'root', fenced: true },
  getBucketLifecycle: { to: 'root', fenced: true },
  setBucketLifecycle: { to: 'root', fenced: true },
  getVersioning: { to: 'root', fenced: true },
  setVersioning: { to: 'root', fenced: true },
  getObjectLock: { to: 'root', fenced: true },
  setObjectLock: { to: 'root', fenced: true },
  getBucketLogging: { to: 'root' },
  setBucketLogging: { to: 'root' },
  /** Quota and usage (quota.ts): the quota is a root setting copied to partitions; usage is summed. */
  getBucketQuota: { to: 'root' },
  setBucketQuota: { to: 'root' },
  bucketUsage: { to: 'sum' },
  getBucketNotification: { to: 'root' },
  /** Stores the rules and queues the s3:TestEvent (durable-object.ts setBucketNotification). */
  setBucketNotification: { to: 'root', wire: (_, [bucket, value]) => [bucket, value, eventOrigin()?.requestId ?? ''] },

  // ---- Partitions (docs/PARTITIONS.md): the root's map, a static split, the settings copy ----
  getPartitionMap: { to: 'root', own: true },
  planStaticSplit: { to: 'root', internal: true },
  /** Sent to a named partition (DurableCatalog.splitBucketStatically). */
  initPartition: { to: 'partition', bare: true, internal: true },
  commitStaticSplit: { to: 'root', internal: true },
  /** The root sends it to each partition (durable-object.ts pushMirror). */
  adoptMirror: { to: 'partition', internal: true },
  setRetiring: { to: 'root', internal: true },
  /** Sent to each partition of a split bucket being deleted (DurableCatalog.removeBucket). */
  holdsObjects: { to: 'partition', internal: true },
  /** To the partition holding the key (an on-line split: durable-object.ts splitPartition). */
  splitPartition: { to: 'key', own: true },
  /** The splitting partition sends these: to the root, then to the new partition. */
  allocatePartition: { to: 'root', internal: true },
  commitPartitionSplit: { to: 'root', internal: true },
  receiveSplitRows: { to: 'partition', internal: true },
  splitCommitted: { to: 'partition', internal: true },
  raisePartitionEpoch: { to: 'partition', internal: true },
  /** To each partition (DurableCatalog.partitionsOf). */
  partitionStats: { to: 'partition', internal: true },
  /** To the partition holding the key, which merges into its lower neighbour (durable-object.ts mergePartition). */
  mergePartition: { to: 'key', own: true },
  /** The merging partition sends these: to its lower neighbour, and the commit to the root. */
  beginMergeIn: { to: 'partition', internal: true },
  receiveMergeRows: { to: 'partition', internal: true },
  receiveMergeGarbage: { to: 'partition', internal: true },
  mergeCommitting: { to: 'partition', internal: true },
  abortMergeIn: { to: 'partition', internal: true },
  applyMerge: { to: 'partition', internal: true },
  commitPartitionMerge: { to: 'root', internal: true },
  /** The cron's note of the partitions small enough to merge (upkeep/split-partitions.ts). */
  markSmallPartitions: { to: 'root', wire: (_, [bucket, small, now]) => [bucket, small, now.getTime()] },

  // ---- Objects and multipart uploads ----
  getManifest: { to: 'key', fenced: true },
  getVersion: { to: 'key', fenced: true },
  listManifests: { to: 'walk', fenced: true },
  listVersions: { to: 'walk', fenced: true },
  prepareWrite: {
    to: 'key',
    fenced: true,
    // An instance of the previous release ignores `size` (a sixth argument it does not take): no quota there.
    wire: (o, [bucket, key, conditions, unitIds, expires, size]) => [
      bucket,
      key,
      { ...conditions, maxVersions: o.maxVersions },
      unitIds,
      expires.getTime(),
      size,
    ],
  },
  commitManifest: {
    to: 'key',
    fenced: true,
    // The request's event origin (model/event-origin.ts): the commit writes its event in the same transaction.
    wire: (o, [bucket, key, manifest, conditions]) => [bucket, key, manifest, { ...conditions, maxVersions: o.maxVersions }, o.graceMs, eventOrigin()],
  },
  /** A bulk load, one partition a call (DurableCatalog.commitManifests groups the keys by the map). */
  commitManifests: { to: 'partition', own: true },
  removeManifest: {
    to: 'key',
    fenced: true,
    wire: (o, [bucket, key, conditions, versionId, bypass]) => [bucket, key, conditions, o.graceMs, versionId, bypass ?? false, eventOrigin()],
  },
  setObjectTags: { to: 'key', fenced: true, wire: (_, [bucket, key, tags, versionId]) => [bucket, key, tags, versionId, eventOrigin()] },
  changeObjectLock: { to: 'key', fenced: true, wire: (_, [bucket, key, versionId, change, bypass]) => [bucket, key, versionId, change, bypass ?? false] },
  reserveUnits: { to: 'key', key: ([, , , key]) => key, fenced: true, wire: (_, [bucket, unitIds, expires, key]) => [bucket, unitIds, expires.getTime(), key] },
  releaseUnits: { to: 'key', key: ([, , key]) => key },
  insertUpload: { to: 'key', fenced: true },
  getUpload: { to: 'key', fenced: true },
  preparePart: {
    to: 'key',
    fenced: true,
    wire: (_, [bucket, key, uploadId, unitIds, expires, size]) => [bucket, key, uploadId, unitIds, expires.getTime(), size],
  },
  putPart: { to: 'key', fenced: true, wire: (o, [bucket, key, uploadId, part]) => [bucket, key, uploadId, part, o.graceMs] },
  listPartRecords: { to: 'key', fenced: true },
  commitUpload: {
    to: 'key',
    fenced: true,
    wire: (o, [bucket, key, uploadId, manifest, conditions]) => [
      bucket,
      key,
      uploadId,
      manifest,
      { ...conditions, maxVersions: o.maxVersions },
      o.graceMs,
      eventOrigin(),
    ],
  },
  getCompletedUpload: { to: 'key', fenced: true },
  removeUpload: { to: 'key', fenced: true, wire: (o, [bucket, key, uploadId]) => [bucket, key, uploadId, o.graceMs] },
  listUploadRecords: { to: 'walk', fenced: true },

  // ---- Garbage (DurableCatalog: into the bucket list when the bucket is gone; a sweep of every instance) ----
  queueGarbage: { to: 'garbage', own: true },
  takeDueGarbage: { to: 'sweep', bare: true, own: true },
  pendingUnitIds: { to: 'sum' },

  // ---- Units: repair, scrub, moves, re-stripes, key rotation ----
  getUnit: { to: 'key', key: ([, , key]) => key },
  listUnits: { to: 'partition' },
  markMissing: { to: 'key', key: ([, , , key]) => key },
  markRepaired: { to: 'key', key: ([, , , key]) => key },
  repairFailed: { to: 'key', key: ([, , , , key]) => key },
  repairSoon: { to: 'partition' },
  listDegradedUnits: { to: 'walk' },
  getScrubCursor: { to: 'partition' },
  recordScrub: { to: 'partition' },
  commitMove: { to: 'key', key: ([, move]) => move.key, wire: (_, [bucket, move, notBefore]) => [bucket, move, notBefore.getTime()] },
  getDrainState: { to: 'partition' },
  setDrainState: { to: 'partition' },
  claimMoveChain: { to: 'partition' },
  endMoveChain: { to: 'partition' },
  listVersionRecords: { to: 'walk' },
  // An instance of the previous release ignores `change` (a sixth argument it does not take).
  commitRestripe: {
    to: 'key',
    key: ([, at]) => at.key,
    wire: (_, [bucket, at, before, storage, notBefore, change]) => [bucket, at, before, storage, notBefore.getTime(), change],
  },
  setRestripeState: { to: 'partition' },
  getAdoptState: { to: 'partition' },
  setAdoptState: { to: 'partition' },
  claimAdoptChain: { to: 'partition' },
  endAdoptChain: { to: 'partition' },
  listSealRecords: { to: 'walk' },
  replaceSealRecords: { to: 'partition' },
  getRotationState: { to: 'partition' },
  setRotationState: { to: 'partition' },

  // ---- Health, lifecycle, access logs ----
  bucketHealth: { to: 'sum', wire: (_, [bucket, now]) => [bucket, now.getTime()] },
  getLifecycleRun: { to: 'root' },
  listKeyVersions: { to: 'walk' },
  setLifecycleProgress: { to: 'partition' },
  appendAccessLog: { to: 'root', wire: (_, [target, group, lines, now, rollMs]) => [target, group, lines, now.getTime(), rollMs] },
  takeAccessLog: { to: 'root', wire: (_, [target, now, rollMs]) => [target, now.getTime(), rollMs] },
  accessLogDelivered: { to: 'root' },
  /** Event delivery figures and the newest events, summed over the partitions (durable-catalog.ts sum). */
  eventStatus: { to: 'sum', wire: (_, [bucket, now]) => [bucket, now.getTime()] },
  listEvents: { to: 'sum' },

  // ---- The catalog journal (sql-journal.ts): the bucket list's instance, or a bucket's ----
  takeJournal: { to: 'journal', bare: true, wire: (_, [instance, now, maxBytes]) => [instance, now.getTime(), maxBytes] },
  journalWritten: { to: 'journal', bare: true, wire: (o, [instance, take, units, now]) => [instance, take, units, now.getTime(), o.graceMs] },
  importJournal: { to: 'root' },
  journalStatus: { to: 'journal', bare: true },
  journalKnown: { to: 'journal', bare: true },
  journalContinueAfter: { to: 'journal', bare: true },
  journalFiles: { to: 'journal', bare: true },
  journalReplaceUnits: {
    to: 'journal',
    bare: true,
    wire: (o, [instance, segment, before, after, now]) => [instance, segment, before, after, now.getTime() + o.graceMs],
  },
} satisfies Table;

export type OperationName = keyof typeof OPERATIONS;

/** The key a `key` row routes by: where its row says, else the second argument. */
export function keyOf(op: Operation<never>, args: readonly unknown[]): unknown {
  return op.key ? (op.key as (a: readonly unknown[]) => unknown)(args) : args[1];
}

/** The row of `name`, or undefined for a name that is none (never one of Object.prototype's). */
export function operation(name: string): Operation<never> | undefined {
  return Object.hasOwn(OPERATIONS, name) ? (OPERATIONS as Record<string, Operation<never>>)[name] : undefined;
}
