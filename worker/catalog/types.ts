/**
 * Catalog: the strongly consistent record of every object (its manifest), behind EcStore. It maps (bucket, key) to
 * the committed ObjectManifest, holds buckets and multipart state, and keeps the list of shard
 * units to delete later (superseded, aborted or orphaned). Commits are the atomic step of a
 * write: conditions (If-Match / If-None-Match) are checked and the new manifest installed in one
 * transaction. Production: one Durable Object per bucket (SQLite) plus one for the bucket list;
 * tests: an in-memory implementation with the same behaviour (one shared contract suite).
 * Errors: S3Error with AWS codes (NoSuchBucket, NoSuchKey, NoSuchUpload, PreconditionFailed,
 * BucketNotEmpty, BucketAlreadyOwnedByYou); nothing else.
 */
import type { CodedUnit, ObjectManifest } from '../format/manifest.ts';
import type { CorsRule } from '../model/cors.ts';
import type { Tag } from '../model/tagging.ts';
import type {
  BucketInfo,
  ListObjectsOptions,
  ListObjectsResult,
  ListUploadsOptions,
  ListUploadsResult,
  MultipartChecksumSpec,
  ObjectChecksum,
  ObjectMetadata,
  UploadInfo,
  WriteConditions,
} from '../model/object-store.ts';

/** What a completed multipart upload produced, remembered for a while so that a repeated
 *  CompleteMultipartUpload (an SDK retrying after a timeout) gets the same answer. */
export interface CompletedUpload {
  key: string;
  etag: string;
  checksum: ObjectChecksum | null;
  size: number;
  lastModified: string; // ISO 8601
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
}

/**
 * Where the background scrubber stopped in a bucket: after every shard of every object up to
 * `afterKey` (null: before the first), and, when a run ended inside an object (one with more
 * shards than a run may check: a multipart object of many parts), at unit `resume.unit` of
 * `resume.key`, the object after `afterKey`. The scrubber never skips a unit.
 */
export interface ScrubCursor {
  afterKey: string | null;
  resume?: { key: string; unit: number };
}

/** How far the background scrubber has come through a bucket (times in ms since the epoch). */
export interface ScrubProgress {
  /** The last key whose every shard was checked in the current pass; null before its first. */
  cursor: string | null;
  /** Objects checked since the current pass started (objects written meanwhile make it approximate). */
  checked: number;
  /** When the current pass started; null before the first. */
  passStartedAt: number | null;
  /** The last complete pass: every object the bucket held at its start was checked in between. */
  lastPassStartedAt: number | null;
  lastPassCompletedAt: number | null;
  passes: number;
}

/** Shards of one unit to rebuild, as the repair queue carries them (engine's RepairTask). */
export interface RepairMessage {
  bucket: string;
  key: string;
  unitId: string;
  shards: number[];
  /** Why: 'write missed shards', 'missing: ...', 'corrupt: ...', 'unavailable: ...' (repair.ts triages on it). */
  reason: string;
}

/** A unit of a committed object with shards missing (missed by a write, or found missing or
 *  rotten by a read or the scrubber; repair takes them off). */
/** Failed repair attempts from which a degraded unit counts as stuck (still retried): the dead letters. */
export const DEAD_LETTER_ATTEMPTS = 8;

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
}

export interface Catalog {
  listBucketRecords(): Promise<BucketInfo[]>;
  /** BucketAlreadyOwnedByYou if it exists. */
  insertBucket(bucket: string, region: string): Promise<void>;
  /** NoSuchBucket if missing. */
  getBucket(bucket: string): Promise<BucketInfo>;
  /** BucketNotEmpty while it holds objects or multipart uploads; NoSuchBucket if missing. */
  removeBucket(bucket: string): Promise<void>;
  /** The bucket's CORS rules, or null when it has none. NoSuchBucket if missing. */
  getBucketCors(bucket: string): Promise<CorsRule[] | null>;
  /** Replaces the bucket's CORS rules; null removes them. NoSuchBucket if missing. */
  setBucketCors(bucket: string, rules: CorsRule[] | null): Promise<void>;
  /** The bucket's tags, or null when it has none. NoSuchBucket if missing. */
  getBucketTagging(bucket: string): Promise<Tag[] | null>;
  /** Replaces the bucket's tags; null removes them. NoSuchBucket if missing. */
  setBucketTagging(bucket: string, tags: Tag[] | null): Promise<void>;

  /** The committed manifest, or null. NoSuchBucket if the bucket is missing. */
  getManifest(bucket: string, key: string): Promise<ObjectManifest | null>;
  /**
   * Atomically checks `conditions` against the current object (If-None-Match '*': 412 if it
   * exists; If-Match: NoSuchKey when absent, 412 on ETag mismatch) and installs `manifest`.
   * The superseded manifest's units are queued for deletion after the grace delay.
   */
  commitManifest(bucket: string, key: string, manifest: ObjectManifest, conditions: WriteConditions): Promise<void>;
  /**
   * Takes `shards` off the `missing` list of unit `unitId` in the committed manifest of `key`,
   * once a repair has rewritten them, so reads use them again. Nothing happens if the object no
   * longer holds that unit (it was overwritten or deleted while the repair ran).
   */
  markRepaired(bucket: string, key: string, unitId: string, shards: number[]): Promise<void>;
  /** Replaces the tags of the committed object (metadata.tags; [] removes them) in place: same
   *  version, same units, nothing queued, and marks the unit that carries its tag record
   *  (rules.ts withTagsRecorded), which it returns: null when the object has none (inline,
   *  multipart). NoSuchKey when there is no object. */
  setObjectTags(bucket: string, key: string, tags: Tag[]): Promise<CodedUnit | null>;
  /** Removes the key (no error if absent; If-Match mismatch: 412); its units are queued for deletion. */
  removeManifest(bucket: string, key: string, ifMatch?: string): Promise<void>;
  /** S3 listing rules: see worker/model/listing.ts (shared budget, no repeated prefixes). */
  listManifests(bucket: string, options: ListObjectsOptions): Promise<ListObjectsResult>;

  insertUpload(bucket: string, key: string, options: { metadata: ObjectMetadata; checksum: MultipartChecksumSpec | null }): Promise<UploadRecord>;
  /** NoSuchUpload unless the upload exists for this key. */
  getUpload(bucket: string, key: string, uploadId: string): Promise<UploadRecord>;
  /** Records a part (replacing the same part number, whose unit is queued for deletion). NoSuchUpload. */
  putPart(bucket: string, key: string, uploadId: string, part: PartRecord): Promise<void>;
  /** Parts in ascending part number, after `partNumberMarker`, at most `maxParts`. NoSuchUpload. */
  listPartRecords(bucket: string, key: string, uploadId: string, partNumberMarker: number, maxParts: number): Promise<{ parts: PartRecord[]; isTruncated: boolean }>;
  /**
   * Atomically: checks the upload still exists (NoSuchUpload) and `conditions`, commits
   * `manifest`, ends the upload and remembers its result (getCompletedUpload) for
   * COMPLETED_UPLOAD_MEMORY_MS; units of parts not named in the manifest and the superseded
   * object's units are queued for deletion.
   */
  commitUpload(bucket: string, key: string, uploadId: string, manifest: ObjectManifest, conditions: WriteConditions): Promise<void>;
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
   * footer is sent) is what makes every orphan findable.
   */
  reserveUnits(bucket: string, unitIds: string[], expires: Date): Promise<void>;
  /**
   * A PUT's one catalog call before its commit: checks `conditions` against the key's current
   * object (PreconditionFailed, NoSuchKey; NoSuchBucket), then reserves `unitIds` as
   * reserveUnits does, atomically; a refused write reserves nothing. The writer withholds every
   * shard's last bytes until this has answered, so no shard is stored unreserved (ec-store.ts).
   */
  prepareWrite(bucket: string, key: string, conditions: WriteConditions, unitIds: string[], expires: Date): Promise<void>;
  /** Ends reservations whose write was refused before any shard was written (no-op for unknown ids). */
  releaseUnits(bucket: string, unitIds: string[]): Promise<void>;
  /** Where the background scrubber stopped in this bucket, or null: the next run starts a pass. */
  getScrubCursor(bucket: string): Promise<ScrubCursor | null>;
  /** Stores where it stopped; null: the pass is complete (every object checked whole). */
  setScrubCursor(bucket: string, cursor: ScrubCursor | null): Promise<void>;
  /**
   * Ids of the units this bucket's catalog holds for deletion (superseded or deleted, not yet
   * collected) or reserved by writes not yet committed: shards a rebuild finds on the backends
   * under these ids must never become visible again.
   */
  pendingUnitIds(bucket: string): Promise<string[]>;
  /** Queues units whose shards must be deleted once `notBefore` has passed (crash leftovers, failed writes). */
  queueGarbage(garbage: GarbageUnits, notBefore: Date): Promise<void>;
  /** Takes (removes and returns) up to `limit` garbage entries due at `now`, expired reservations included. */
  takeDueGarbage(now: Date, limit: number): Promise<GarbageUnits[]>;

  /** The bucket's counts and health as of `now` (NoSuchBucket if missing); no scan of objects. */
  bucketHealth(bucket: string, now: Date): Promise<BucketHealth>;
  /**
   * Records shards of unit `unitId` of `key` found missing or rotten (by a read or the scrubber):
   * reads skip them from now on and the unit goes on the repair worklist. Nothing happens if the
   * object no longer holds that unit.
   */
  markMissing(bucket: string, key: string, unitId: string, shards: number[]): Promise<void>;
  /** A repair attempt of the unit failed: it is retried later, with backoff (sql-repairs.ts). */
  repairFailed(bucket: string, key: string, unitId: string, error: string): Promise<void>;
  /**
   * Makes sure the bucket's degraded units are being repaired: `reset` (a backend is healthy
   * again, a read found a degraded unit) makes every one due now; without it only an idle
   * worklist is woken.
   */
  repairSoon(bucket: string, reset: boolean): Promise<void>;
  /** Degraded units in (key, unitId) order after `after` (null: from the start), at most `limit`. NoSuchBucket. */
  listDegradedUnits(bucket: string, after: { key: string; unitId: string } | null, limit: number): Promise<DegradedUnit[]>;
  /** Garbage of buckets already deleted (units still on the backends): queued, and due at `now`. */
  deletedBucketGarbage(now: Date): Promise<{ queued: number; due: number }>;
}
