/**
 * Catalog: the strongly consistent record of every stored object version (its manifest) and of
 * every coded unit (which version it belongs to, its shard states), behind EcStore and upkeep.
 * It holds buckets and multipart state, the repair worklist, the scrubber's progress and the list
 * of shard units to delete later (superseded, aborted or orphaned). Commits are the atomic step
 * of a write: conditions (If-Match / If-None-Match) are checked and the new version installed in
 * one transaction. One implementation: a Durable Object per bucket (SQLite) plus one for the
 * bucket list (durable-object.ts); Node tests run the same SQL in process (docs/ARCHITECTURE.md).
 * Errors: S3Error with AWS codes (NoSuchBucket, NoSuchKey, NoSuchUpload, PreconditionFailed,
 * BucketNotEmpty, BucketAlreadyOwnedByYou); nothing else.
 */
import type { BackfillState } from '../model/adopt-backfill.ts';
import type { BucketUsage, StoredQuota } from './quota.ts';
import type { PartitionMap } from './partition-map.ts';
import type { LogGroup } from '../model/bucket-logging.ts';
import type { AccessLogBatch, AppendResult } from './sql-access-log.ts';
import type { JournalSegment, JournalValue } from '../format/journal.ts';
import type { CodedUnit, ObjectManifest } from '../format/manifest.ts';
import type { CorsRule } from '../model/cors.ts';
import type { LifecycleRule, ObjectExpiration, VersionFacts } from '../model/lifecycle.ts';
import type { Tag } from '../model/tagging.ts';
import type { ClassUsage } from './ledger-figures.ts';
import type { DefaultRetention, LegalHoldStatus, ObjectLockConfig, Retention } from '../model/object-lock.ts';

/** A change of a version's lock: its retention (null: removed) and/or its legal hold. */
export interface ObjectLockChange {
  retention?: Retention | null;
  legalHold?: LegalHoldStatus;
}
import type { SseRecord } from '../model/sse.ts';
import type { BucketSettings } from '../model/bucket-settings.ts';
import type { PlacementCount } from './ledger-figures.ts';
import type { PolicyRedundancy } from './ledger-figures.ts';
import type { RestripeState, VersionAt } from './restripe-record.ts';
import type { AdoptCatalog, AdoptChainCatalog } from '../model/adopt-backfill.ts';
export type { AdoptCatalog, AdoptChainCatalog };
import type { ScrubCursor, ScrubProgress } from './scrub-progress.ts';
export type { ScrubCursor, ScrubProgress } from './scrub-progress.ts';
export type { VersionAt } from './restripe-record.ts';
import type {
  BucketInfo,
  DeleteConditions,
  DeleteObjectResult,
  ListObjectsOptions,
  ListObjectsResult,
  ListUploadsOptions,
  ListUploadsResult,
  MultipartChecksumSpec,
  ObjectChecksum,
  ObjectMetadata,
  ListVersionsOptions,
  ListVersionsResult,
  UploadInfo,
  VersioningStatus,
  WriteConditions,
} from '../model/object-store.ts';

/**
 * A version as a read finds it: an object version with its manifest, a delete marker, or
 * nothing. `versionId` is the id S3 shows ('null' for the null version); absent where S3 sends no
 * x-amz-version-id (a bucket never versioned, read without naming a version).
 */
export type VersionLookup =
  | { kind: 'object'; manifest: ObjectManifest; versionId?: string; expiration?: ObjectExpiration }
  | { kind: 'marker'; versionId: string; lastModified: string }
  | { kind: 'none' };

/** What a completed multipart upload produced, remembered for a while so that a repeated
 *  CompleteMultipartUpload (an SDK retrying after a timeout) gets the same answer. */
export interface CompletedUpload {
  key: string;
  etag: string;
  checksum: ObjectChecksum | null;
  size: number;
  lastModified: string; // ISO 8601
  /** The version id S3 shows for the completed object (absent: a bucket never versioned). */
  versionId?: string;
  /** x-amz-expiration as the completion stated it (absent: no rule applied, or remembered before it was kept). */
  expiration?: ObjectExpiration;
}

/**
 * What a commit (commitManifest, commitUpload) answers: the version id S3 sends back
 * (x-amz-version-id: only an Enabled bucket's writes have one) and, when a lifecycle Days or Date
 * rule will expire the new version, when and by which rule (x-amz-expiration), judged in the
 * commit's own transaction so that a write costs no catalog call more.
 */
export interface CommitResult {
  versionId?: string;
  expiration?: ObjectExpiration;
}

/** A stored multipart part: its coded units (one, or segments of a wide code) plus what ListParts and Complete need. */
export interface PartRecord {
  partNumber: number;
  etag: string; // quoted
  size: number;
  lastModified: string; // ISO 8601
  units: CodedUnit[];
  /** The part's own checksum (COMPOSITE and FULL_OBJECT completion), if the upload has one. */
  checksum?: ObjectChecksum | null;
}

export interface UploadRecord extends UploadInfo {
  metadata: ObjectMetadata;
}

/** Shard units that are no longer referenced; `bucket` says where their shard keys live. */
export interface GarbageUnits {
  bucket: string;
  units: CodedUnit[];
  /**
   * Units of writes that never committed (reservations past their expiry): their placement was
   * never recorded, so the collector looks for `sg1/<bucket>/<unitId>/` on every backend.
   */
  unitIds?: string[];
  /**
   * Single shard files left behind by a move (upkeep/drain.ts): the unit lives on, its shard
   * `shard` now elsewhere; the copy on `backend` (and its tag record, when `tagRecord`) goes.
   */
  shards?: MovedShard[];
}

/** A shard file a move left behind: unit `unitId`'s shard `shard` on backend `backend`. */
export interface MovedShard {
  unitId: string;
  shard: number;
  backend: string;
  tagRecord?: true;
}

/** One shard's move, as the mover commits it: shard `shard` of unit `unitId` from backend `from` to `to`. */
export interface ShardMove {
  /** The key whose version holds the unit: where the catalog routes the move (docs/PARTITIONS.md). */
  key: string;
  unitId: string;
  shard: number;
  from: string;
  to: string;
}

/** A coded unit of a stored object version, as the unit index finds it. */
export interface UnitRecord {
  unitId: string;
  key: string;
  versionId: string;
  /** Its place in the version's units. */
  ordinal: number;
  unit: CodedUnit;
}

/**
 * Why shards of a unit are to be rebuilt. 'write-missed': a write reached quorum without them;
 * 'missing' / 'corrupt': a read or the scrubber found them gone or rotten; 'unavailable': their
 * backend did not answer (not damage: repair checks before rewriting); 'worklist': handed on by
 * the catalog's repair worklist; 'operator': an operator's repair sweep.
 */
export type RepairReason =
  | { kind: 'write-missed' | 'worklist' | 'operator' }
  | { kind: 'missing' | 'corrupt' | 'unavailable'; by: 'read' | 'scrubber'; detail?: string };

/** Shards of one unit to rebuild, as the repair queue carries them (engine's RepairTask). */
export interface RepairMessage {
  bucket: string;
  unitId: string;
  shards: number[];
  reason: RepairReason;
  /**
   * The key whose version holds the unit: the catalog routes the unit's verbs by it
   * (docs/PARTITIONS.md). Every sender names it; a message without one (none is known) fails its
   * repair and stays on the bucket's worklist, whose alarm sends it again with its key.
   */
  key: string;
}

/** Failed repair attempts from which a degraded unit counts as stuck (still retried): the dead letters. */
export const DEAD_LETTER_ATTEMPTS = 8;

/** A unit of a stored object version with shards missing (missed by a write, or found missing or
 *  rotten by a read or the scrubber; repair takes them off). */
export interface DegradedUnit {
  key: string;
  unitId: string;
  missing: number[];
  /** When the unit became degraded (ms since the epoch). */
  since: number;
  /** Repair attempts that failed so far; from DEAD_LETTER_ATTEMPTS (sql-repairs.ts) it counts as stuck. */
  attempts: number;
  /** When the next attempt is due (absent: now). */
  nextAttemptAt?: number;
  /** Why the last attempt failed. */
  lastError?: string;
}

/** What a bucket holds and how healthy it is, kept up to date by every commit (issue 13). */
export interface BucketHealth {
  bucket: string;
  /** Each partition's range and figures, in key order (one for a bucket that never split; absent: an older instance). */
  partitions?: PartitionShare[];
  objects: number;
  /** Bytes of object data, as clients stored them. */
  bytes: number;
  /** Of which inline in the catalog (on no backend). */
  inlineBytes: number;
  /** Per backend id: shard files of committed objects and their stored bytes (headers and block
   *  checksums included; shards missed by a write count once repaired). */
  backends: Record<string, { shards: number; bytes: number }>;
  degradedObjects: number;
  degradedUnits: number;
  missingShards: number;
  /**
   * Redundancy left, from the shards recorded missing: `atRisk` units have exactly k shards (one
   * more loss loses them), `lost` units fewer than k (their objects cannot be read; only a
   * backend coming back can restore them). Shards on a backend that is down right now but not
   * yet recorded missing are not in these counts (the health checks add what a down backend means).
   */
  redundancy: {
    atRisk: number;
    lost: number;
    /** Object bytes in the `atRisk` and the `lost` units. */
    atRiskBytes: number;
    lostBytes: number;
    /** Degraded units by how many shards they miss ("1": one short of k+m, ...); the rest of the bucket's units are whole. */
    byMissing: Record<string, number>;
    /** Every unit, whole ones too, and its bytes, per policy ("4+2") by shards left (redundancy.ts): the units sum to scrub.units. */
    byPolicy: Record<string, PolicyRedundancy>;
  };
  /** Every unit counted by the backends its present shards are on (placement-counts.ts): what the
   *  status counts shards on unreachable backends as missing from (ops/unreachable.ts). */
  placements?: PlacementCount[];
  /** Objects (versions), bytes and stored bytes per storage class (usage.ts classesFromLedger); absent from an older release. */
  classes?: ClassUsage;
  oldestDegradedAt: number | null;
  /** Degraded units whose repair failed DEAD_LETTER_ATTEMPTS times or more (the dead letters: still retried). */
  repairStuck: number;
  /** Multipart uploads in progress. */
  uploads: number;
  /** Unit ids reserved by writes in flight; `expired`: orphans the collector has yet to take. */
  reservations: { held: number; expired: number };
  /** Units waiting to be deleted; `due`: past their grace delay (the collector's backlog). */
  garbage: { queued: number; due: number };
  scrub: ScrubProgress;
  /** The lifecycle job's progress through the bucket (absent: it never ran here). */
  lifecycle?: LifecycleProgress;
  /** The bucket's catalog journal (sql-journal.ts): changes not yet on the backends, the last segment stored. */
  journal?: JournalStatus;
  /** The re-stripe's record (state row 'restripe'; restripe-record.ts), absent: it never ran here. */
  restripe?: RestripeState;
  /** An adopted bucket's backfill record (state row 'adopt'; model/adopt-backfill.ts), absent: none. */
  adopt?: BackfillState;
  /** Every version row, delete markers included, and the delete markers (absent from an older release). */
  versions?: number;
  deleteMarkers?: number;
  /** Bytes of the parts of multipart uploads in flight (absent from an older release). */
  multipartBytes?: number;
  /** The bucket's quota (quota.ts) and what it counts now; absent: no quota. */
  quota?: { bytes: number | null; objects: number | null; usedBytes: number; usedObjects: number };
  /** Event notification delivery per destination (catalog/sql-outbox.ts); absent: the bucket never queued an event. */
  events?: DestinationEvents[];
}

/** What a lifecycle pass did (counts). */
export interface LifecycleCounts {
  /** Object versions and delete markers looked at. */
  examined: number;
  /** Current versions expired (deleted, or hidden behind a delete marker in a versioned bucket). */
  expired: number;
  /** Noncurrent versions deleted. */
  noncurrentDeleted: number;
  /** Expired object delete markers removed. */
  markersRemoved: number;
  uploadsAborted: number;
  /** Actions that failed (retried by a later pass); `lastError` says why. */
  failed: number;
  /**
   * Versions moved to another storage class (issue 44), and their object bytes rewritten; versions
   * a transition cannot rewrite (SSE-C, COMPLIANCE-retained on a backend that enforces it).
   * Absent in progress a release before transitions stored: 0.
   */
  transitioned?: number;
  transitionedBytes?: number;
  transitionsBlocked?: number;
}

/**
 * The lifecycle job's progress through a bucket (state row 'lifecycle-progress'). A pass walks
 * the keys (phase 'versions'), then the multipart uploads (phase 'uploads'); `cursor` null:
 * between passes. Times in ms since the epoch.
 */
export interface LifecycleProgress {
  cursor: { phase: 'versions' | 'uploads'; afterKey: string | null; afterUploadId: string | null } | null;
  passStartedAt: number | null;
  lastPassStartedAt: number | null;
  lastPassCompletedAt: number | null;
  passes: number;
  lastRunAt: number | null;
  /** The pass in progress (between passes: zeros). */
  current: LifecycleCounts;
  /** The last complete pass. */
  last: LifecycleCounts | null;
  lastError?: { at: number; message: string };
}

/**
 * The catalog's ports, one per consumer, so that each layer sees only what it uses and a catalog
 * spread over several Durable Objects per bucket (issue 39, docs/PARTITIONS.md) changes
 * implementations more than ports: every call names its bucket, and every key-scoped call its
 * key (the unit verbs the unit's key). Known gap: the journal's verbs name an instance = a bucket,
 * and the scrub cursor and progress rows are one per bucket. Each verb is declared in one port; a
 * port that needs another's verb picks it (`extends Pick<...>`).
 * - BucketCatalog and ObjectCatalog: the object store (engine/ec-store.ts);
 * - UpkeepCatalog: repair, scrub, moves and rebuild (upkeep/), by unit; GarbageCatalog: the collector;
 * - HealthCatalog: what ops reads (ops/data-health.ts);
 * - LifecycleCatalog, KeyCatalog, RestripeCatalog, JournalCatalog: those upkeep jobs.
 * `Catalog` is all of them: what the composition root builds (DurableCatalog, whose calls the
 * operation table describes: operations.ts).
 */

/** The bucket list, which every sweep over the buckets starts from. */
export interface BucketList {
  listBucketRecords(): Promise<BucketInfo[]>;
}

/** The collector's verbs (upkeep/collector.ts): units whose shards are to be deleted. */
export interface GarbageCatalog {
  /** Queues units whose shards must be deleted once `notBefore` has passed (crash leftovers, failed writes). */
  queueGarbage(garbage: GarbageUnits, notBefore: Date): Promise<void>;
  /** Takes (removes and returns) up to `limit` garbage entries due at `now`, expired reservations included. */
  takeDueGarbage(now: Date, limit: number): Promise<GarbageUnits[]>;
}

export interface BucketCatalog extends BucketList {
  /** BucketAlreadyOwnedByYou if it exists. */
  /** `objectLock`: created with Object Lock enabled (versioning Enabled, which can then never be Suspended). */
  insertBucket(bucket: string, region: string, options?: { objectLock?: boolean }): Promise<void>;
  /** NoSuchBucket if missing. */
  getBucket(bucket: string): Promise<BucketInfo>;
  /** BucketNotEmpty while it holds objects or multipart uploads; NoSuchBucket if missing. */
  removeBucket(bucket: string): Promise<void>;
  /** The bucket's CORS rules, or null when it has none. NoSuchBucket if missing. */
  getBucketCors(bucket: string): Promise<CorsRule[] | null>;
  /** Replaces the bucket's CORS rules; null removes them. NoSuchBucket if missing. */
  setBucketCors(bucket: string, rules: CorsRule[] | null): Promise<void>;
  /** The bucket policy's JSON document as put (state row 'policy'), or null when it has none. NoSuchBucket if missing. */
  getBucketPolicy(bucket: string): Promise<string | null>;
  /**
   * Replaces the bucket policy (already validated); null removes it. `isPublic` (the caller's
   * judgment, policy-eval.ts): AccessDenied when the bucket's public access block has
   * BlockPublicPolicy, checked in the write's transaction. NoSuchBucket if missing.
   */
  setBucketPolicy(bucket: string, policy: string | null, isPublic?: boolean): Promise<void>;
  /** The public access block's JSON (model/public-access-block.ts), or null. NoSuchBucket if missing. */
  getBucketPublicAccessBlock(bucket: string): Promise<string | null>;
  /** Replaces it; null removes it. NoSuchBucket if missing. */
  setBucketPublicAccessBlock(bucket: string, value: string | null): Promise<void>;
  /** Replaces the default encryption (model/default-encryption.ts JSON; null removes it): a request-path setting. */
  setBucketEncryption(bucket: string, value: string | null): Promise<void>;
  /** This isolate's view of the bucket's request-path settings (model/bucket-settings.ts): no call. */
  cachedBucketSettings(bucket: string): BucketSettings;
  /** The bucket's request-path settings as stored now (one call; the view is updated). NoSuchBucket if missing. */
  getBucketSettings(bucket: string): Promise<BucketSettings>;
  /** The bucket's access logging configuration (JSON of model/bucket-logging.ts), or null. NoSuchBucket if missing. */
  getBucketLogging(bucket: string): Promise<string | null>;
  /** Replaces it (already validated); null turns logging off. NoSuchBucket if missing. */
  setBucketLogging(bucket: string, value: string | null): Promise<void>;
  /** The bucket's notification rules (JSON of model/notification.ts NotificationRule[]), or null. NoSuchBucket if missing. */
  getBucketNotification(bucket: string): Promise<string | null>;
  /** Replaces them (null: none), their ARNs checked against the gateway's destinations; queues an s3:TestEvent per destination. */
  setBucketNotification(bucket: string, value: string | null): Promise<void>;
  /**
   * Access log records into the TARGET bucket's instance (sql-access-log.ts), with a batch due now
   * claimed for the caller to deliver. NoSuchBucket when the target is gone.
   */
  appendAccessLog(target: string, group: LogGroup, lines: { at: number; line: string }[], now: Date, rollMs: number): Promise<AppendResult>;
  /** A batch due for delivery (its claim expired, or its oldest record `rollMs` old), claimed; null when none. */
  takeAccessLog(target: string, now: Date, rollMs: number): Promise<AccessLogBatch | null>;
  /** The batch's log object is stored (or never can be): its records go. Idempotent. */
  accessLogDelivered(target: string, batchId: string): Promise<void>;
  /** The bucket's tags, or null when it has none. NoSuchBucket if missing. */
  getBucketTagging(bucket: string): Promise<Tag[] | null>;
  /** Replaces the bucket's tags; null removes them. NoSuchBucket if missing. */
  setBucketTagging(bucket: string, tags: Tag[] | null): Promise<void>;
  /** The bucket's lifecycle rules (state row 'lifecycle'), or null when it has none. NoSuchBucket if missing. */
  getBucketLifecycle(bucket: string): Promise<LifecycleRule[] | null>;
  /** Replaces the bucket's lifecycle rules; null removes them (the job's progress stays). NoSuchBucket if missing. */
  setBucketLifecycle(bucket: string, rules: LifecycleRule[] | null): Promise<void>;
}

export interface ObjectCatalog extends BucketCatalog {
  /** The manifest of the key's current version, or null. NoSuchBucket if the bucket is missing. */
  getManifest(bucket: string, key: string): Promise<ObjectManifest | null>;
  /**
   * The current version of `key` (versionId null) or the version named ('null': the null
   * version), with the id S3 shows for it. NoSuchBucket if the bucket is missing.
   */
  getVersion(bucket: string, key: string, versionId: string | null): Promise<VersionLookup>;
  /**
   * Atomically checks `conditions` against the current object (If-None-Match '*': 412 if it
   * exists; If-Match: NoSuchKey when absent, 412 on ETag mismatch) and installs `manifest` as the
   * key's newest version (manifest.versionId). Versioning Enabled: every older version stays (its
   * units too). Otherwise (never versioned, Suspended) the new version is the null version and
   * the null version it replaces, if any, has its units queued for deletion after the grace
   * delay. Answers the version id S3 sends back and the new version's lifecycle expiration (CommitResult).
   */
  commitManifest(bucket: string, key: string, manifest: ObjectManifest, conditions: WriteConditions): Promise<CommitResult>;
  /** Replaces the tags of the current version, or of version `versionId` (metadata.tags; []
   *  removes them) in place: same version, same units, nothing queued, and marks the unit that
   *  carries its tag record (rules.ts withTagsRecorded), which it returns: null when the object
   *  has none (inline, multipart). NoSuchKey when there is no object (NoSuchVersion). */
  setObjectTags(bucket: string, key: string, tags: Tag[], versionId?: string): Promise<CodedUnit | null>;
  /**
   * DeleteObject. With `versionId`: removes exactly that version (none: no error); if it was
   * the newest, the next newest becomes current. Without: a bucket never versioned removes the
   * key; Enabled adds a delete marker; Suspended replaces the null version by a null marker.
   * Removed object versions have their units queued for deletion. `conditions` are checked in
   * the same transaction as the delete, against the version named or the current version
   * (model/conditions.ts checkDeleteConditions: 412, or NoSuchKey with no current object): a
   * mismatch changes nothing, and no write can come between the check and the delete.
   * A locked object version (model/object-lock.ts) is never removed: AccessDenied, unless
   * `bypassGovernance` and its lock is GOVERNANCE retention only. A delete marker may always be added.
   */
  removeManifest(bucket: string, key: string, conditions?: DeleteConditions, versionId?: string, bypassGovernance?: boolean): Promise<DeleteObjectResult>;
  /** The bucket's Object Lock configuration, null when lock is not enabled. NoSuchBucket. */
  getObjectLock(bucket: string): Promise<ObjectLockConfig | null>;
  /** Sets the default retention; enables lock on a versioning-Enabled bucket (else InvalidBucketState). */
  setObjectLock(bucket: string, rule: DefaultRetention | null): Promise<void>;
  /** PutObjectRetention / PutObjectLegalHold on the current version or `versionId` (sql-objects.ts changeObjectLock). */
  changeObjectLock(bucket: string, key: string, versionId: string | undefined, change: ObjectLockChange, bypassGovernance?: boolean): Promise<void>;
  /** ListObjectVersions: keys in listing order, newest version first within a key (model/listing.ts rules). */
  listVersions(bucket: string, options: ListVersionsOptions): Promise<ListVersionsResult>;
  /** The bucket's versioning state, null when never configured. NoSuchBucket. */
  getVersioning(bucket: string): Promise<VersioningStatus | null>;
  setVersioning(bucket: string, status: VersioningStatus): Promise<void>;
  /** S3 listing rules: see worker/model/listing.ts (shared budget, no repeated prefixes). */
  listManifests(bucket: string, options: ListObjectsOptions): Promise<ListObjectsResult>;

  insertUpload(bucket: string, key: string, options: { metadata: ObjectMetadata; checksum: MultipartChecksumSpec | null }): Promise<UploadRecord>;
  /** NoSuchUpload unless the upload exists for this key. */
  getUpload(bucket: string, key: string, uploadId: string): Promise<UploadRecord>;
  /** Records a part (replacing the same part number, whose unit is queued for deletion). NoSuchUpload. */
  putPart(bucket: string, key: string, uploadId: string, part: PartRecord): Promise<void>;
  /** Parts in ascending part number, after `partNumberMarker`, at most `maxParts`. NoSuchUpload. */
  listPartRecords(
    bucket: string,
    key: string,
    uploadId: string,
    partNumberMarker: number,
    maxParts: number,
  ): Promise<{ parts: PartRecord[]; isTruncated: boolean }>;
  /**
   * Atomically: checks the upload still exists (NoSuchUpload) and `conditions`, commits
   * `manifest`, ends the upload and remembers its result (getCompletedUpload) for
   * COMPLETED_UPLOAD_MEMORY_MS; units of parts not named in the manifest and, as commitManifest
   * says, the replaced null version's units are queued for deletion. Answers as commitManifest.
   */
  commitUpload(bucket: string, key: string, uploadId: string, manifest: ObjectManifest, conditions: WriteConditions): Promise<CommitResult>;
  /** The result of upload `uploadId` of `key` if it completed within COMPLETED_UPLOAD_MEMORY_MS, else null. */
  getCompletedUpload(bucket: string, key: string, uploadId: string): Promise<CompletedUpload | null>;
  /** Ends the upload (NoSuchUpload if unknown); its parts' units are queued for deletion. */
  removeUpload(bucket: string, key: string, uploadId: string): Promise<void>;
  listUploadRecords(bucket: string, options: ListUploadsOptions): Promise<ListUploadsResult>;

  /**
   * Records that shards are about to be written under these unit ids (NoSuchBucket if missing).
   * A commit or putPart naming a unit releases its reservation; one still held at `expires` is a
   * write that never committed (a crash, a refused or abandoned upload), and takeDueGarbage hands
   * it to the collector. Reserving before any shard is stored (prepareWrite: before any shard's
   * footer is sent) is what makes every orphan findable. `key`: the key being written (the
   * units are reserved where it is kept; docs/PARTITIONS.md).
   */
  reserveUnits(bucket: string, unitIds: string[], expires: Date, key: string): Promise<void>;
  /**
   * A PUT's one catalog call before its commit: checks `conditions` against the key's current
   * object (PreconditionFailed, NoSuchKey; NoSuchBucket), then reserves `unitIds` as
   * reserveUnits does, atomically; a refused write reserves nothing. The writer withholds every
   * shard's last bytes until this has answered, so no shard is stored unreserved (ec-store.ts).
   * `size`, the body's declared length, is checked against the bucket's quota in the same step
   * (QuotaExceeded: catalog/quota.ts), so a write past the quota stores nothing.
   */
  prepareWrite(bucket: string, key: string, conditions: WriteConditions, unitIds: string[], expires: Date, size?: number): Promise<void>;
  /**
   * An UploadPart's one catalog call before putPart: the upload must exist (NoSuchUpload;
   * NoSuchBucket), then `unitIds` are reserved as reserveUnits does, atomically; answers the
   * upload's checksum spec and its SSE record. Like prepareWrite, it runs while the part's shards upload.
   */
  preparePart(bucket: string, key: string, uploadId: string, unitIds: string[], expires: Date, size?: number): Promise<PreparedPart>;
  /** Ends reservations of a write of `key` refused before any shard was written (no-op for unknown ids). */
  releaseUnits(bucket: string, unitIds: string[], key: string): Promise<void>;
}

/**
 * The unit verbs name the unit's key last (`key`): the catalog routes them by it, as it routes the
 * key's versions (docs/PARTITIONS.md: a unit id names no partition, and a key's partition changes
 * with a split). A unit not stored under that key is one not stored.
 */
export interface UpkeepCatalog extends BucketList, GarbageCatalog, Pick<HealthCatalog, 'deletedBucketGarbage'> {
  /** The unit with this id among the bucket's stored object versions, or null (never, or no longer, stored). NoSuchBucket. */
  getUnit(bucket: string, unitId: string, key: string): Promise<UnitRecord | null>;
  /** The bucket's units in id order after `afterUnit` (null: from the first), at most `limit`. NoSuchBucket. */
  listUnits(bucket: string, afterUnit: string | null, limit: number): Promise<UnitRecord[]>;
  /** Where the background scrubber stopped in this bucket, or null: the next run starts a pass. */
  getScrubCursor(bucket: string): Promise<ScrubCursor | null>;
  /**
   * The scrubber checked every shard of `checked` (unit ids) and stopped at `cursor` (null: the
   * pass is complete, every unit in it checked).
   */
  recordScrub(bucket: string, checked: string[], cursor: ScrubCursor | null): Promise<void>;
  /**
   * Records shards of unit `unitId` found missing or rotten (by a read or the scrubber): reads
   * skip them from now on and the unit goes on the repair worklist. Nothing happens if the bucket
   * no longer stores that unit.
   */
  markMissing(bucket: string, unitId: string, shards: number[], key: string): Promise<void>;
  /**
   * Takes `shards` off the `missing` list of unit `unitId`, once a repair has rewritten them, so
   * reads use them again. Nothing happens if the unit is no longer stored (its version was
   * replaced or deleted while the repair ran).
   */
  markRepaired(bucket: string, unitId: string, shards: number[], key: string): Promise<void>;
  /**
   * Commits a shard's move, compare-and-set: if the bucket still stores unit `move.unitId` with
   * shard `move.shard` on `move.from`, its placement names `move.to` instead (in every place the
   * unit is recorded: the version's manifest, the ledger's shard counts, the repair worklist; a
   * shard recorded missing was rebuilt there, so it is missing no more), and the copy on `from`
   * is queued for deletion at `notBefore` (reads in flight still use it). Answers 'moved', or
   * 'gone' when the unit is no longer stored or its placement changed meanwhile (a concurrent
   * overwrite, delete or move won): nothing changed, and the new copy is the caller's to delete.
   */
  commitMove(bucket: string, move: ShardMove, notBefore: Date): Promise<'moved' | 'gone'>;
  /** The bucket's drain progress record (state 'drain'; upkeep/drain-progress.ts), or null. */
  getDrainState(bucket: string): Promise<string | null>;
  setDrainState(bucket: string, value: string | null): Promise<void>;
  /**
   * Claims the bucket for mover chain `chain` (upkeep/move-chain.ts), compare-and-set: true, with
   * the claim renewed at `now`, unless another chain claimed it less than `staleMs` ago (false,
   * nothing changed). catalog/move-chain-record.ts.
   */
  claimMoveChain(bucket: string, chain: string, now: number, staleMs: number): Promise<boolean>;
  /** Ends `chain`'s claim on the bucket (nothing if another chain holds it). */
  endMoveChain(bucket: string, chain: string): Promise<void>;
  /** A repair attempt of the unit failed: it is retried later, with backoff (sql-repairs.ts); `unreachable`: the backends its shards could not be written to, backed off for every unit of the bucket. */
  repairFailed(bucket: string, unitId: string, error: string, unreachable: string[], key: string): Promise<void>;
  /**
   * Makes sure the bucket's degraded units are being repaired: `reset` (a backend is healthy
   * again, a read found a degraded unit) makes every one due now; without it only an idle
   * worklist is woken.
   */
  repairSoon(bucket: string, reset: boolean, backend?: string): Promise<void>;
  /** Degraded units in (key, unitId) order after `after` (null: from the start), at most `limit`. NoSuchBucket. */
  listDegradedUnits(bucket: string, after: { key: string; unitId: string } | null, limit: number): Promise<DegradedUnit[]>;
  /**
   * Ids of the units this bucket's catalog holds for deletion (superseded or deleted, not yet
   * collected) or reserved by writes not yet committed: shards a rebuild finds on the backends
   * under these ids must never become visible again.
   */
  pendingUnitIds(bucket: string): Promise<string[]>;
}

/** What the lifecycle job reads of a bucket before a slice. */
export interface LifecycleRun {
  /** The rules, null when none. */
  rules: LifecycleRule[] | null;
  /** When they were stored (ms); null when not recorded (stored by an earlier release) or no rules. */
  setAt: number | null;
  /** The job's progress, null when it never ran here. */
  progress: LifecycleProgress | null;
}

/** What the lifecycle job reads and records (upkeep/lifecycle.ts); it deletes through the object store, as DeleteObject does. */
export interface LifecycleCatalog extends BucketList, Pick<ObjectCatalog, 'listUploadRecords'> {
  /** The bucket's rules, when they were set and the job's progress (LifecycleRun). NoSuchBucket. */
  getLifecycleRun(bucket: string): Promise<LifecycleRun>;
  /** Keys after `afterKey` with all their versions, newest first, about `maxVersions` versions (sql-lifecycle.ts). NoSuchBucket. */
  listKeyVersions(bucket: string, afterKey: string | null, maxVersions: number): Promise<{ keys: { key: string; versions: VersionFacts[] }[]; atEnd: boolean }>;
  setLifecycleProgress(bucket: string, progress: LifecycleProgress | null): Promise<void>;
}

/** What ops reads (ops/data-health.ts): each bucket's health, the deleted buckets' garbage, the bucket list's journal, the catalog-loss record. */
export interface HealthCatalog extends BucketList, Pick<JournalCatalog, 'journalStatus' | 'catalogLoss'> {
  /** The bucket's counts and health as of `now` (NoSuchBucket if missing); no scan of objects. */
  bucketHealth(bucket: string, now: Date): Promise<BucketHealth>;
  /** Garbage of buckets already deleted (units still on the backends): queued, and due at `now`. */
  deletedBucketGarbage(now: Date): Promise<{ queued: number; due: number }>;
  /** Event delivery figures per destination (catalog/sql-outbox.ts), summed over the bucket's partitions. NoSuchBucket. */
  eventStatus(bucket: string, now: Date): Promise<DestinationEvents[]>;
  /** The bucket's newest events and their delivery state, newest first, at most `limit`. NoSuchBucket. */
  listEvents(bucket: string, limit: number): Promise<EventEntry[]>;
}

/** What preparePart answers of the upload: its checksum spec and how the client asked it encrypted. */
export interface PreparedPart {
  checksum: MultipartChecksumSpec | null;
  sse: SseRecord | null;
}

/** Where a record holding wrapped data keys is: a stored version (key, version id) or an uploaded part (upload id, part number). */
export interface SealRecordCursor {
  kind: 'version' | 'part';
  a: string;
  b: string;
  /** In a split bucket: the low key of the partition the record is in (partition-walk.ts walkSeals). */
  low?: string;
}

/** One such record as stored (JSON: an ObjectManifest or a multipart PartRecord). */
export interface SealRecord {
  at: SealRecordCursor;
  json: string;
}

/**
 * Key rotation (upkeep/rotate-keys.ts): the records that may hold wrapped data keys, paged, and
 * replaced only if unchanged since read. The catalog never holds a key.
 */
export interface KeyCatalog extends BucketList, KmsKeyCatalog {
  /** Up to `limit` records after `after` (null: from the start): versions, then parts. NoSuchBucket. */
  listSealRecords(bucket: string, after: SealRecordCursor | null, limit: number): Promise<SealRecord[]>;
  /** Replaces each record still equal to `before` by `after`; how many were. NoSuchBucket. */
  replaceSealRecords(bucket: string, items: { at: SealRecordCursor; before: string; after: string }[]): Promise<number>;
  /** The bucket's rotation progress record (state 'key-rotation'), or null. */
  getRotationState(bucket: string): Promise<string | null>;
  setRotationState(bucket: string, value: string | null): Promise<void>;
}

/**
 * The key table of named KMS keys (sql-kms-keys.ts, in the bucket list's instance): records as
 * JSON (model/kms-key.ts KmsKeyRecord), each replaced only if unchanged since read.
 */
export interface KmsKeyCatalog {
  listKmsKeys(): Promise<string[]>;
  getKmsKey(id: string): Promise<string | null>;
  /** Writes `after` if the record is still `before` (null: absent); whether it did. */
  replaceKmsKey(id: string, before: string | null, after: string): Promise<boolean>;
}

/** A stored object version as the re-stripe reads it: its manifest's JSON, compared at the swap. */
export interface VersionRecord {
  at: VersionAt;
  json: string;
}

/**
 * The re-stripe (upkeep/restripe.ts): stored versions paged, rewritten units reserved while they
 * are written, and one version's storage swapped by compare-and-set (sql-restripe.ts). What the
 * ledger counts per unit geometry (bucketHealth's redundancy.byPolicy) is what is left to
 * rewrite; its `restripe` is the record.
 */
/** What a rewrite changes of a version besides its storage: its storage class (null: STANDARD). */
export interface RestripeChange {
  storageClass: string | null;
}

export interface RestripeCatalog extends BucketList, Pick<HealthCatalog, 'bucketHealth'>, Pick<ObjectCatalog, 'reserveUnits'> {
  /** Stored object versions (no delete markers) after `after` (null: from the first), at most `limit`. NoSuchBucket. */
  listVersionRecords(bucket: string, after: VersionAt | null, limit: number): Promise<VersionRecord[]>;
  /**
   * Swaps the storage of the version at `at` for `storage` if its manifest is still `before`;
   * its old units are queued for deletion at `notBefore`. 'gone': the version was deleted or
   * changed meanwhile and nothing changed but the rewrite's units, queued for deletion now.
   * The rewrite's reservations end either way. `change.storageClass`: the version's storage class
   * becomes it in the same step (a lifecycle transition, issue 44; null: STANDARD). NoSuchBucket.
   */
  commitRestripe(
    bucket: string,
    at: VersionAt,
    before: string,
    storage: ObjectManifest['storage'],
    notBefore: Date,
    change?: RestripeChange,
  ): Promise<'rewritten' | 'gone'>;
  /** Replaces the bucket's re-stripe record (state 'restripe'; restripe-record.ts; bucketHealth answers it); null removes it. */
  setRestripeState(bucket: string, value: string | null): Promise<void>;
}

/**
 * The catalog journal (sql-journal.ts, format/journal.ts): instances are named by bucket, and the
 * bucket list by BUCKET_LIST_INSTANCE.
 */
export interface JournalCatalog extends Pick<GarbageCatalog, 'queueGarbage'> {
  /** Every journal instance: the bucket list's, then each bucket's. */
  journalInstances(): Promise<string[]>;
  /** The instance's next segment to store, or null when nothing is due. */
  takeJournal(instance: string, now: Date, maxBytes: number): Promise<JournalTake | null>;
  /** The segment of `take` is stored as `units`; false when the instance is gone (delete what was written). */
  journalWritten(instance: string, take: JournalTake, units: CodedUnit[], now: Date): Promise<boolean>;
  journalStatus(instance: string): Promise<JournalStatus | null>;
  /** Writes a batch of the bucket's journaled rows back (a lost catalog restored); returns the rows written. NoSuchBucket, InvalidRequest. */
  importJournal(bucket: string, batch: JournalImportBatch): Promise<number>;
  /** The journal units the instance knows (its segment files, and journal units it holds for deletion) and the last segment number it handed out; null: no such instance. */
  journalKnown(instance: string): Promise<JournalKnown | null>;
  /** The instance's journal goes on after `from` (a journal on the backends discarded: its files adopted, deleted once a new generation completes). */
  journalContinueAfter(instance: string, from: NonNullable<JournalImportBatch['finish']>): Promise<void>;
  /** The instance's segment files and their units, in segment order (the journal's upkeep: journal-upkeep.ts). */
  journalFiles(instance: string): Promise<{ segment: number; units: CodedUnit[] }[]>;
  /**
   * The segment's units become `after` (shards recorded missing or repaired, or the segment
   * rewritten: units of `before` not in `after` go to the garbage) if its units are still
   * `before` (ids, in order); false when the segment is gone or was changed meanwhile.
   */
  journalReplaceUnits(instance: string, segment: number, before: string[], after: CodedUnit[], now: Date): Promise<boolean>;
  /** What the backends' journal holds beyond this catalog (upkeep/catalog-loss.ts), kept in the bucket list's instance. */
  catalogLoss(): Promise<CatalogLoss>;
  /** Replaces the catalog-loss record (upkeep/catalog-loss.ts computes it; rebuild and discard clear entries). */
  setCatalogLoss(loss: CatalogLoss): Promise<void>;
}

/** What an instance knows of its journal on the backends (catalog-loss detection). */
export interface JournalKnown {
  unitIds: string[];
  /** The last segment number handed out (a segment on the backends numbered above it is one this catalog never wrote). */
  taken: number;
}

/**
 * Journal instances whose segments on the backends this catalog does not know (upkeep/catalog-loss.ts):
 * `lost`, confirmed (the catalog lacks the bucket, or its journal is behind the backends'):
 * writes to those buckets are refused and their journal stops until an operator rebuilds or
 * discards; `suspect`: a bucket the catalog lacks, seen once (a deleted bucket's segments being
 * collected look the same for a moment), confirmed when seen again a minute later.
 */
export interface CatalogLoss {
  lost: Record<string, LostInstance>;
  suspect: Record<string, LostInstance>;
}

export interface LostInstance {
  /** 'unknown': the catalog has no such bucket; 'behind': its journal numbers end below the backends'. */
  reason: 'unknown' | 'behind';
  /** The newest segment number found on the backends. */
  newest: number;
  /** The catalog's own last segment number (0: none, or no such instance). */
  catalogSegment: number;
  /** When it was first found (ms). */
  foundAt: number;
}

/** One batch of a journal import (sql-journal.ts importRows, SqlJournal.continueAfter). */
export interface JournalImportBatch {
  rows: { t: string; r: Record<string, JournalValue> }[];
  /** The first batch: refused when the bucket holds any version, unless `merge`. */
  first: boolean;
  /** Into a bucket recreated after its catalog was lost (catalog-loss.ts): rows it already has win (they are newer). */
  merge?: boolean;
  /** The last batch: where the imported journal ended, and its segment files (adopted). */
  finish?: { newest: number; generation: number; files: { segment: number; generation: number; units: CodedUnit[]; takenAt: number }[] };
}

// ---- The catalog journal's records (sql-journal.ts) ----

/** Where a generation's dump has got to: the next table (index into JOURNALED) and the last key dumped of it. */
export interface DumpCursor {
  table: number;
  after: JournalValue[] | null;
}

/** The journal's progress (journal_meta 'journal'). */
export interface JournalMeta {
  /** The last segment number handed out. */
  segment: number;
  generation: number;
  generationFirst: number;
  /** The current generation's dump still to do; null when done. */
  dump: DumpCursor | null;
  /** Segments and records acknowledged in the current generation; rows its dump held. */
  segmentsInGeneration: number;
  recordsInGeneration: number;
  dumpedRows: number;
  /** The newest segment acknowledged, and when it was taken (ms). */
  acked: number;
  ackedTakenAt: number | null;
  /** The newest generation whose dump is complete, and its first segment. */
  complete: { generation: number; first: number } | null;
}

/** What a take hands to the writer, and what it gives back when the segment is stored. */
export interface JournalTake {
  segment: JournalSegment;
  /** The highest journal_changes id the segment holds (0: none). */
  upTo: number;
  /** The dump cursor this segment's dump rows start at, and the one after them ('done': they end the dump); null when it holds none. */
  dumpFrom: DumpCursor | null;
  dumpAfter: DumpCursor | 'done' | null;
  /** Rows of the dump it holds. */
  dumped: number;
}

/** The journal's state as the status shows it. */
export interface JournalStatus {
  /** Changed rows not yet in a stored segment. */
  pending: number;
  /** A generation's dump is in progress (its rows are not all stored yet). */
  dumping: boolean;
  acked: number;
  ackedTakenAt: number | null;
  generation: number;
  complete: boolean;
  files: number;
  /** The segment files' units by shards recorded present (sql-journal.ts journalRedundancy); absent from catalogs before issue 37. */
  redundancy?: JournalRedundancy;
}

/** The journal's units counted by redundancy, from the shards recorded missing (the journal's scrub records them). */
export interface JournalRedundancy {
  units: number;
  /** Exactly k shards present (one more loss loses the segment), and fewer than k (lost). */
  atRisk: number;
  lost: number;
  /** Units by code ("4+2", "2+2", "1+2" for replicas of three): a code narrower than the policy's is a write made while backends were down. */
  byCode: Record<string, number>;
  /** Shard files per backend (a drained backend must end with none). */
  shardsByBackend: Record<string, number>;
  /**
   * Units grouped by code and the backends holding their present shards (sorted): what the status
   * needs to count shards on unreachable backends as missing (ops/unreachable.ts), as it does for
   * data units. Absent from statuses written before it existed.
   */
  placements?: { k: number; m: number; on: string[]; units: number }[];
}

/** A bucket's partitions (docs/PARTITIONS.md). */
/** Bucket quotas and usage (catalog/quota.ts, docs/QUOTAS.md): the admin API's and the status's. */
export interface QuotaCatalog {
  /** The bucket's quota as stored (its root's), or null. NoSuchBucket. */
  getBucketQuota(bucket: string): Promise<StoredQuota | null>;
  /** Replaces it (null: no quota); copied to every partition of a split bucket before it answers. Use quota.ts setQuota, which cuts the shares. */
  setBucketQuota(bucket: string, quota: StoredQuota | null): Promise<void>;
  /** Usage over every version and partition (one instance per partition; a count of the versions of each). NoSuchBucket. */
  bucketUsage(bucket: string): Promise<BucketUsage>;
}

export interface PartitionCatalog {
  /** The bucket's partition map (one partition until it is split). NoSuchBucket. */
  getPartitionMap(bucket: string): Promise<PartitionMap>;
  /**
   * Cuts an empty bucket that never split into ranges at `boundaries` (each a new partition's
   * first key); BucketNotEmpty if it holds anything. Until on-line splits land, for tests and
   * operators who know a bucket's key space before they fill it. Idempotent.
   */
  splitBucketStatically(bucket: string, boundaries: string[]): Promise<PartitionMap>;
  /**
   * Splits the partition holding `key` at `at` (absent: at its median key) while it goes on
   * answering (docs/PARTITIONS.md "Splits on line"), and answers the new map. InvalidRequest when
   * the partition holds fewer than two keys; SlowDown while writes of an earlier release are in
   * flight there. `stopAfter` (tests) abandons the split where a crash would: null is answered.
   */
  splitPartition(bucket: string, key: string, at?: string, stopAfter?: SplitStop): Promise<PartitionMap | null>;
  /**
   * A bulk load: each item committed as commitManifest commits it, a transaction per partition
   * and call (the items grouped by the map). Items of one call are committed or refused
   * together per partition; a refusal (QuotaExceeded, PreconditionFailed) throws and leaves the
   * partitions already written as they are. For loads of many keys (issue 39's scale proof).
   */
  commitManifests(bucket: string, items: { key: string; manifest: ObjectManifest; conditions: WriteConditions }[]): Promise<void>;
  /**
   * Merges the partition holding `key` into its lower neighbour while both go on answering
   * (docs/PARTITIONS.md "Merges"), and answers the new map. InvalidRequest for the bucket's first
   * partition; SlowDown while events of the partition wait for delivery (the merge is given up,
   * nothing changed); OperationAborted when either partition is splitting or merging. `stopAfter`
   * as for splitPartition.
   */
  mergePartition(bucket: string, key: string, stopAfter?: SplitStop): Promise<PartitionMap | null>;
  /**
   * Notes which partitions (by the low of their range) are small enough to merge now; answers
   * since when each has been (the first time it was noted small since it last was not).
   */
  markSmallPartitions(bucket: string, small: string[], now: Date): Promise<Record<string, number>>;
  /** Each partition of the bucket with its range and figures (what the split thresholds are compared with). */
  partitionsOf(bucket: string): Promise<PartitionFigures[]>;
}

/** One partition of a bucket as the status shows it. */
export interface PartitionFigures extends PartitionStats {
  instance: string;
  low: string;
  /** The next partition's low (null: to the end). */
  high: string | null;
}

export type Catalog = PartitionCatalog &
  QuotaCatalog &
  ObjectCatalog &
  UpkeepCatalog &
  GarbageCatalog &
  HealthCatalog &
  KeyCatalog &
  LifecycleCatalog &
  JournalCatalog &
  RestripeCatalog &
  AdoptCatalog &
  AdoptChainCatalog;

/** One partition's figures the split thresholds are compared with (CatalogObject.partitionStats). */
export interface PartitionStats {
  /** Stored versions (delete markers not counted), from the ledger. */
  versions: number;
  /** Their bytes. */
  bytes: number;
  /** The instance's SQLite database (a Durable Object holds at most 10 GB). */
  databaseBytes: number;
  /** A split in progress: its phase. */
  splitting: 'copying' | 'committing' | null;
  /** Calls the instance answered a second, over the last 5 minutes (model/request-rate.ts); 0 after it was evicted. */
  requestsPerSecond: number;
  /** The key that halves its recent key-addressed calls, where a split for rate cuts (null: too few seen). */
  hotMedian: string | null;
}

/** A partition's range with its figures, as its bucket's health lists them. */
export interface PartitionShare extends PartitionStats {
  low: string;
  /** The next partition's low (null: to the end). */
  high: string | null;
}

/** Where a test abandons a split's driver, as a crash there would. */
export type SplitStop = 'page' | 'fence' | 'commit';
/** An event's delivery state (sql-outbox.ts). */
export type OutboxState = 'queued' | 'delivered' | 'dead';

/** One destination's figures in one partition (summed over partitions by the client). */
export interface DestinationEvents {
  destination: string;
  /** Undelivered now. */
  backlog: number;
  /** Ever queued, delivered, retried (failed attempts), dead-lettered, dropped (outbox full). */
  queued: number;
  delivered: number;
  retried: number;
  deadLettered: number;
  dropped: number;
  /** Age of the oldest undelivered event (ms), null when none waits. */
  oldestUndeliveredMs: number | null;
  lastError: string | null;
  /** When the next attempt may run (ms), null when nothing waits. */
  nextAttemptAt: number | null;
}

/** One row as `shardgate events` shows it. */
export interface EventEntry {
  eventId: string;
  destination: string;
  eventName: string;
  key: string;
  sequencer: string;
  created: number;
  state: OutboxState;
  attempts: number;
  doneAt: number | null;
  lastError: string | null;
}
