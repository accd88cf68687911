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
 * - `port`: the row is a port verb of its name, in that port (ports.ts); without one, an
 *   operation only a composite of DurableCatalog sends (a split's pages, a bucket's creation);
 * - `wire`: the port verb's parameters (annotated here: this is where they are written) as the
 *   method takes them, when they differ (a Date sent as ms, the client's garbage grace and version
 *   cap added);
 * - `own`: DurableCatalog writes the port verb itself (it spans calls or keeps state) and sends
 *   this operation from there, with the method's arguments.
 * A port verb's type is derived, never declared: its parameters are the method's (or the row's
 * `wire` parameters), its answer the method's Reply value (durable-catalog.ts Forwarded), its
 * contract the method's doc comment; an `own` verb's type is DurableCatalog's method. So a new
 * verb is written twice: its SQL (the CatalogObject method over sql-*.ts, with the doc comment
 * that is its contract) and its row here. CatalogObject.dispatch runs by this table and
 * DurableCatalog forwards every port verb that is not `own` from it: no forwarder, no port
 * declaration, no list of fenced names. durable-catalog.ts checks that rows and methods agree
 * (this file cannot import durable-object.ts: a cycle).
 */
import type { Route } from './routing.ts';
import type { JournalTake, ObjectLockChange, PartRecord, RestripeChange, ShardMove, VersionAt } from './types.ts';
import type { DeleteConditions, WriteConditions } from '../model/object-store.ts';
import type { CodedUnit, ObjectManifest } from '../format/manifest.ts';
import type { Tag } from '../model/tagging.ts';
import type { LogGroup } from '../model/bucket-logging.ts';
import { eventOrigin } from '../model/event-origin.ts';

/** What the client adds to the port's arguments. */
export interface WireOptions {
  /** Milliseconds before superseded units may be deleted (rules.ts DEFAULT_GARBAGE_GRACE_MS). */
  graceMs: number;
  /** Versions kept per key (rules.ts DEFAULT_MAX_VERSIONS_PER_KEY). */
  maxVersions: number;
}

/**
 * The ports: what each consumer takes (ports.ts builds each from the rows naming it). A verb's
 * row names its home port; ports.ts composes ports that share verbs.
 */
export type PortName =
  | 'BucketList'
  | 'GarbageCatalog'
  | 'BucketCatalog'
  | 'ObjectCatalog'
  | 'UpkeepCatalog'
  | 'LifecycleCatalog'
  | 'HealthCatalog'
  | 'KeyCatalog'
  | 'KmsKeyCatalog'
  | 'RestripeCatalog'
  | 'JournalCatalog'
  | 'QuotaCatalog'
  | 'PartitionCatalog'
  | 'AdoptCatalog'
  | 'AdoptChainCatalog';

export interface Operation {
  to: Route;
  /** A port verb of this name, and the port it belongs to; absent: an operation only a composite sends. */
  port?: PortName;
  /** A `key` route's key among the arguments (the port's), when it is not the second. */
  key?: (args: never) => string;
  fenced?: true;
  bare?: true;
  own?: true;
  /** The port's arguments (annotated: they are the port verb's parameters) as the method takes them. */
  wire?: (o: WireOptions, args: never) => [] | unknown[];
}

/** A CatalogObject as a gateway reaches it: its one entry point (durable-object.ts dispatch). */
export interface CatalogEntry {
  /** `route`: how a call inside a split bucket was routed (partition-map.ts: Moved when stale). */
  dispatch(name: string, args: unknown[], stamp?: string, route?: { key?: string; epoch: number }): Promise<unknown>;
}

export const OPERATIONS = {
  // ---- The bucket list (routing.ts BUCKET_LIST) ----
  listBucketRecords: { port: 'BucketList', to: 'registry', bare: true },
  registerBucket: { to: 'registry' },
  unregisterBucket: { to: 'registry', bare: true },
  queueOrphanGarbage: { to: 'registry', bare: true },
  catalogLoss: { port: 'JournalCatalog', to: 'registry', bare: true },
  setCatalogLoss: { port: 'JournalCatalog', to: 'registry', bare: true },
  deletedBucketGarbage: { port: 'HealthCatalog', to: 'registry', bare: true, wire: (_, [now]: [now: Date]) => [now.getTime()] },
  /** The key table of named KMS keys (sql-kms-keys.ts). */
  listKmsKeys: { port: 'KmsKeyCatalog', to: 'registry', bare: true },
  getKmsKey: { port: 'KmsKeyCatalog', to: 'registry', bare: true },
  replaceKmsKey: { port: 'KmsKeyCatalog', to: 'registry', bare: true },

  // ---- A bucket's life and settings ----
  /** From the bucket list, or (fenced) from the bucket's instance: DurableCatalog.getBucket. */
  getBucket: { port: 'BucketCatalog', to: 'root', fenced: true, own: true },
  initBucket: { to: 'root', bare: true },
  retireBucket: { to: 'root', fenced: true },
  destroyIfRetired: { to: 'root', bare: true },
  getBucketSettings: { port: 'BucketCatalog', to: 'root', own: true },
  getBucketPolicy: { port: 'BucketCatalog', to: 'root' },
  setBucketPolicy: { port: 'BucketCatalog', to: 'root', own: true },
  getBucketPublicAccessBlock: { port: 'BucketCatalog', to: 'root' },
  setBucketPublicAccessBlock: { port: 'BucketCatalog', to: 'root', own: true },
  setBucketEncryption: { port: 'BucketCatalog', to: 'root', own: true },
  setBucketAccess: { port: 'BucketCatalog', to: 'root', own: true },
  getBucketCors: { port: 'BucketCatalog', to: 'root', fenced: true },
  setBucketCors: { port: 'BucketCatalog', to: 'root', fenced: true },
  getBucketTagging: { port: 'BucketCatalog', to: 'root', fenced: true },
  setBucketTagging: { port: 'BucketCatalog', to: 'root', fenced: true },
  getBucketLifecycle: { port: 'BucketCatalog', to: 'root', fenced: true },
  setBucketLifecycle: { port: 'BucketCatalog', to: 'root', fenced: true },
  getVersioning: { port: 'ObjectCatalog', to: 'root', fenced: true },
  setVersioning: { port: 'ObjectCatalog', to: 'root', fenced: true },
  getObjectLock: { port: 'ObjectCatalog', to: 'root', fenced: true },
  setObjectLock: { port: 'ObjectCatalog', to: 'root', fenced: true },
  getBucketLogging: { port: 'BucketCatalog', to: 'root' },
  setBucketLogging: { port: 'BucketCatalog', to: 'root' },
  /** Quota and usage (quota.ts): the quota is a root setting copied to partitions; usage is summed. */
  getBucketQuota: { port: 'QuotaCatalog', to: 'root' },
  setBucketQuota: { port: 'QuotaCatalog', to: 'root' },
  bucketUsage: { port: 'QuotaCatalog', to: 'sum' },
  getBucketNotification: { port: 'BucketCatalog', to: 'root' },
  /** Stores the rules and queues the s3:TestEvent (durable-object.ts setBucketNotification). */
  setBucketNotification: {
    port: 'BucketCatalog',
    to: 'root',
    wire: (_, [bucket, value]: [bucket: string, value: string | null]) => [bucket, value, eventOrigin()?.requestId ?? ''],
  },

  // ---- Partitions (docs/PARTITIONS.md): the root's map, a static split, the settings copy ----
  getPartitionMap: { port: 'PartitionCatalog', to: 'root', own: true },
  planStaticSplit: { to: 'root' },
  /** Sent to a named partition (DurableCatalog.splitBucketStatically). */
  initPartition: { to: 'partition', bare: true },
  commitStaticSplit: { to: 'root' },
  /** The root sends it to each partition (durable-object.ts pushMirror). */
  adoptMirror: { to: 'partition' },
  setRetiring: { to: 'root' },
  /** Sent to each partition of a split bucket being deleted (DurableCatalog.removeBucket). */
  holdsObjects: { to: 'partition' },
  /** To the partition holding the key (an on-line split: durable-object.ts splitPartition). */
  splitPartition: { port: 'PartitionCatalog', to: 'key', own: true },
  /** The splitting partition sends these: to the root, then to the new partition. */
  allocatePartition: { to: 'root' },
  commitPartitionSplit: { to: 'root' },
  receiveSplitRows: { to: 'partition' },
  splitCommitted: { to: 'partition' },
  raisePartitionEpoch: { to: 'partition' },
  /** To each partition (DurableCatalog.partitionsOf). */
  partitionStats: { to: 'partition' },
  /** To the partition holding the key, which merges into its lower neighbour (durable-object.ts mergePartition). */
  mergePartition: { port: 'PartitionCatalog', to: 'key', own: true },
  /** The merging partition sends these: to its lower neighbour, and the commit to the root. */
  beginMergeIn: { to: 'partition' },
  receiveMergeRows: { to: 'partition' },
  receiveMergeGarbage: { to: 'partition' },
  mergeCommitting: { to: 'partition' },
  abortMergeIn: { to: 'partition' },
  applyMerge: { to: 'partition' },
  commitPartitionMerge: { to: 'root' },
  /** The cron's note of the partitions small enough to merge (upkeep/split-partitions.ts). */
  markSmallPartitions: {
    port: 'PartitionCatalog',
    to: 'root',
    wire: (_, [bucket, small, now]: [bucket: string, small: string[], now: Date]) => [bucket, small, now.getTime()],
  },

  // ---- Objects and multipart uploads ----
  getManifest: { port: 'ObjectCatalog', to: 'key', fenced: true },
  getVersion: { port: 'ObjectCatalog', to: 'key', fenced: true },
  listManifests: { port: 'ObjectCatalog', to: 'walk', fenced: true },
  listVersions: { port: 'ObjectCatalog', to: 'walk', fenced: true },
  prepareWrite: {
    port: 'ObjectCatalog',
    to: 'key',
    fenced: true,
    // An instance of the previous release ignores `size` (a sixth argument it does not take): no quota there.
    wire: (
      o,
      [bucket, key, conditions, unitIds, expires, size]: [
        bucket: string,
        key: string,
        conditions: WriteConditions,
        unitIds: string[],
        expires: Date,
        size?: number,
      ],
    ) => [bucket, key, { ...conditions, maxVersions: o.maxVersions }, unitIds, expires.getTime(), size],
  },
  commitManifest: {
    port: 'ObjectCatalog',
    to: 'key',
    fenced: true,
    // The request's event origin (model/event-origin.ts): the commit writes its event in the same transaction.
    wire: (o, [bucket, key, manifest, conditions]: [bucket: string, key: string, manifest: ObjectManifest, conditions: WriteConditions]) => [
      bucket,
      key,
      manifest,
      { ...conditions, maxVersions: o.maxVersions },
      o.graceMs,
      eventOrigin(),
    ],
  },
  /** A bulk load, one partition a call (DurableCatalog.commitManifests groups the keys by the map). */
  commitManifests: { port: 'PartitionCatalog', to: 'partition', own: true },
  removeManifest: {
    port: 'ObjectCatalog',
    to: 'key',
    fenced: true,
    wire: (
      o,
      [bucket, key, conditions, versionId, bypass]: [
        bucket: string,
        key: string,
        conditions?: DeleteConditions,
        versionId?: string,
        bypassGovernance?: boolean,
      ],
    ) => [bucket, key, conditions, o.graceMs, versionId, bypass ?? false, eventOrigin()],
  },
  setObjectTags: {
    port: 'ObjectCatalog',
    to: 'key',
    fenced: true,
    wire: (_, [bucket, key, tags, versionId]: [bucket: string, key: string, tags: Tag[], versionId?: string]) => [bucket, key, tags, versionId, eventOrigin()],
  },
  setObjectAcl: { port: 'ObjectCatalog', to: 'key', fenced: true },
  changeObjectLock: {
    port: 'ObjectCatalog',
    to: 'key',
    fenced: true,
    wire: (
      _,
      [bucket, key, versionId, change, bypass]: [
        bucket: string,
        key: string,
        versionId: string | undefined,
        change: ObjectLockChange,
        bypassGovernance?: boolean,
      ],
    ) => [bucket, key, versionId, change, bypass ?? false],
  },
  reserveUnits: {
    port: 'ObjectCatalog',
    to: 'key',
    key: ([, , , key]: [unknown, unknown, unknown, string]) => key,
    fenced: true,
    wire: (_, [bucket, unitIds, expires, key]: [bucket: string, unitIds: string[], expires: Date, key: string]) => [bucket, unitIds, expires.getTime(), key],
  },
  releaseUnits: { port: 'ObjectCatalog', to: 'key', key: ([, , key]: [unknown, unknown, string]) => key },
  insertUpload: { port: 'ObjectCatalog', to: 'key', fenced: true },
  getUpload: { port: 'ObjectCatalog', to: 'key', fenced: true },
  preparePart: {
    port: 'ObjectCatalog',
    to: 'key',
    fenced: true,
    wire: (
      _,
      [bucket, key, uploadId, unitIds, expires, size]: [bucket: string, key: string, uploadId: string, unitIds: string[], expires: Date, size?: number],
    ) => [bucket, key, uploadId, unitIds, expires.getTime(), size],
  },
  putPart: {
    port: 'ObjectCatalog',
    to: 'key',
    fenced: true,
    wire: (o, [bucket, key, uploadId, part]: [bucket: string, key: string, uploadId: string, part: PartRecord]) => [bucket, key, uploadId, part, o.graceMs],
  },
  listPartRecords: { port: 'ObjectCatalog', to: 'key', fenced: true },
  commitUpload: {
    port: 'ObjectCatalog',
    to: 'key',
    fenced: true,
    wire: (
      o,
      [bucket, key, uploadId, manifest, conditions]: [bucket: string, key: string, uploadId: string, manifest: ObjectManifest, conditions: WriteConditions],
    ) => [bucket, key, uploadId, manifest, { ...conditions, maxVersions: o.maxVersions }, o.graceMs, eventOrigin()],
  },
  getCompletedUpload: { port: 'ObjectCatalog', to: 'key', fenced: true },
  removeUpload: {
    port: 'ObjectCatalog',
    to: 'key',
    fenced: true,
    wire: (o, [bucket, key, uploadId]: [bucket: string, key: string, uploadId: string]) => [bucket, key, uploadId, o.graceMs],
  },
  listUploadRecords: { port: 'ObjectCatalog', to: 'walk', fenced: true },

  // ---- Garbage (DurableCatalog: into the bucket list when the bucket is gone; a sweep of every instance) ----
  queueGarbage: { port: 'GarbageCatalog', to: 'garbage', own: true },
  takeDueGarbage: { port: 'GarbageCatalog', to: 'sweep', bare: true, own: true },
  pendingUnitIds: { port: 'UpkeepCatalog', to: 'sum' },

  // ---- Units: repair, scrub, moves, re-stripes, key rotation ----
  getUnit: { port: 'UpkeepCatalog', to: 'key', key: ([, , key]: [unknown, unknown, string]) => key },
  listUnits: { port: 'UpkeepCatalog', to: 'partition' },
  markMissing: { port: 'UpkeepCatalog', to: 'key', key: ([, , , key]: [unknown, unknown, unknown, string]) => key },
  markRepaired: { port: 'UpkeepCatalog', to: 'key', key: ([, , , key]: [unknown, unknown, unknown, string]) => key },
  repairFailed: { port: 'UpkeepCatalog', to: 'key', key: ([, , , , key]: [unknown, unknown, unknown, unknown, string]) => key },
  repairSoon: { port: 'UpkeepCatalog', to: 'partition' },
  listDegradedUnits: { port: 'UpkeepCatalog', to: 'walk' },
  getScrubCursor: { port: 'UpkeepCatalog', to: 'partition' },
  recordScrub: { port: 'UpkeepCatalog', to: 'partition' },
  commitMove: {
    port: 'UpkeepCatalog',
    to: 'key',
    key: ([, move]: [unknown, ShardMove, ...unknown[]]) => move.key,
    wire: (_, [bucket, move, notBefore]: [bucket: string, move: ShardMove, notBefore: Date]) => [bucket, move, notBefore.getTime()],
  },
  getDrainState: { port: 'UpkeepCatalog', to: 'partition' },
  setDrainState: { port: 'UpkeepCatalog', to: 'partition' },
  claimMoveChain: { port: 'UpkeepCatalog', to: 'partition' },
  endMoveChain: { port: 'UpkeepCatalog', to: 'partition' },
  listVersionRecords: { port: 'RestripeCatalog', to: 'walk' },
  // An instance of the previous release ignores `change` (a sixth argument it does not take).
  commitRestripe: {
    port: 'RestripeCatalog',
    to: 'key',
    key: ([, at]: [unknown, VersionAt, ...unknown[]]) => at.key,
    wire: (
      _,
      [bucket, at, before, storage, notBefore, change]: [
        bucket: string,
        at: VersionAt,
        before: string,
        storage: ObjectManifest['storage'],
        notBefore: Date,
        change?: RestripeChange,
      ],
    ) => [bucket, at, before, storage, notBefore.getTime(), change],
  },
  setRestripeState: { port: 'RestripeCatalog', to: 'partition' },
  getAdoptState: { port: 'AdoptCatalog', to: 'partition' },
  setAdoptState: { port: 'AdoptCatalog', to: 'partition' },
  claimAdoptChain: { port: 'AdoptChainCatalog', to: 'partition' },
  endAdoptChain: { port: 'AdoptChainCatalog', to: 'partition' },
  listSealRecords: { port: 'KeyCatalog', to: 'walk' },
  replaceSealRecords: { port: 'KeyCatalog', to: 'partition' },
  getRotationState: { port: 'KeyCatalog', to: 'partition' },
  setRotationState: { port: 'KeyCatalog', to: 'partition' },

  // ---- Health, lifecycle, access logs ----
  bucketHealth: { port: 'HealthCatalog', to: 'sum', wire: (_, [bucket, now]: [bucket: string, now: Date]) => [bucket, now.getTime()] },
  getLifecycleRun: { port: 'LifecycleCatalog', to: 'root' },
  listKeyVersions: { port: 'LifecycleCatalog', to: 'walk' },
  setLifecycleProgress: { port: 'LifecycleCatalog', to: 'partition' },
  appendAccessLog: {
    port: 'BucketCatalog',
    to: 'root',
    wire: (
      _,
      [target, group, lines, now, rollMs, owner]: [
        target: string,
        group: LogGroup,
        lines: { at: number; line: string }[],
        now: Date,
        rollMs: number,
        owner?: string | null,
      ],
    ) => [target, group, lines, now.getTime(), rollMs, owner ?? null],
  },
  takeAccessLog: {
    port: 'BucketCatalog',
    to: 'root',
    wire: (_, [target, now, rollMs]: [target: string, now: Date, rollMs: number]) => [target, now.getTime(), rollMs],
  },
  accessLogDelivered: { port: 'BucketCatalog', to: 'root' },
  /** Event delivery figures and the newest events, summed over the partitions (durable-catalog.ts sum). */
  eventStatus: { port: 'HealthCatalog', to: 'sum', wire: (_, [bucket, now]: [bucket: string, now: Date]) => [bucket, now.getTime()] },
  listEvents: { port: 'HealthCatalog', to: 'sum' },

  // ---- The catalog journal (sql-journal.ts): the bucket list's instance, or a bucket's ----
  takeJournal: {
    port: 'JournalCatalog',
    to: 'journal',
    bare: true,
    wire: (_, [instance, now, maxBytes]: [instance: string, now: Date, maxBytes: number]) => [instance, now.getTime(), maxBytes],
  },
  journalWritten: {
    port: 'JournalCatalog',
    to: 'journal',
    bare: true,
    wire: (o, [instance, take, units, now]: [instance: string, take: JournalTake, units: CodedUnit[], now: Date]) => [
      instance,
      take,
      units,
      now.getTime(),
      o.graceMs,
    ],
  },
  importJournal: { port: 'JournalCatalog', to: 'root' },
  journalStatus: { port: 'JournalCatalog', to: 'journal', bare: true },
  journalKnown: { port: 'JournalCatalog', to: 'journal', bare: true },
  journalContinueAfter: { port: 'JournalCatalog', to: 'journal', bare: true },
  journalFiles: { port: 'JournalCatalog', to: 'journal', bare: true },
  journalReplaceUnits: {
    port: 'JournalCatalog',
    to: 'journal',
    bare: true,
    wire: (o, [instance, segment, before, after, now]: [instance: string, segment: number, before: string[], after: CodedUnit[], now: Date]) => [
      instance,
      segment,
      before,
      after,
      now.getTime() + o.graceMs,
    ],
  },
} satisfies Record<string, Operation>;

export type OperationName = keyof typeof OPERATIONS;

/** The key a `key` row routes by: where its row says, else the second argument. */
export function keyOf(op: Operation, args: readonly unknown[]): unknown {
  return op.key ? (op.key as (a: readonly unknown[]) => unknown)(args) : args[1];
}

/** The row of `name`, or undefined for a name that is none (never one of Object.prototype's). */
export function operation(name: string): Operation | undefined {
  return Object.hasOwn(OPERATIONS, name) ? (OPERATIONS as Record<string, Operation>)[name] : undefined;
}
