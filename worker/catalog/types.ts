/**
 * The catalog's record types (its ports, the verbs consumers call, are derived in ports.ts).
 * The catalog: the strongly consistent record of every stored object version (its manifest) and of
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

/** What the lifecycle job reads of a bucket before a slice. */
export interface LifecycleRun {
  /** The rules, null when none. */
  rules: LifecycleRule[] | null;
  /** When they were stored (ms); null when not recorded (stored by an earlier release) or no rules. */
  setAt: number | null;
  /** The job's progress, null when it never ran here. */
  progress: LifecycleProgress | null;
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

/** One partition of a bucket as the status shows it. */
export interface PartitionFigures extends PartitionStats {
  instance: string;
  low: string;
  /** The next partition's low (null: to the end). */
  high: string | null;
}

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
  /**
   * A merge in progress: this partition's phase going into its lower neighbour, or 'receiving'
   * while its upper neighbour merges into it. Absent from an instance of an earlier release.
   */
  merging?: 'copying' | 'committing' | 'receiving' | null;
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
