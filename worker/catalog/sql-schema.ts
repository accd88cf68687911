/**
 * The SQLite schema of CatalogObject (version SCHEMA_VERSION; schema-migrations.ts brings older
 * instances up to it) and the row codecs. Keys are TEXT with SQLite's default BINARY collation,
 * which compares UTF-8 bytes: exactly S3's listing order, so listing is an index range scan.
 * Times are integer milliseconds.
 * Objects are addressed by version: `versions` holds every stored version of a key (its manifest,
 * or for a delete marker `{"lastModified"}`), `objects` is the current-version pointer with the
 * columns a listing returns, so a listing never parses manifests, and `units` indexes every coded
 * unit of a stored version (unit id -> key, version, position) so that repair, scrub and
 * collection address units directly, with when the scrubber last checked each one.
 * S3 versioning (schema 3): `seq` orders a key's versions by commit (the newest, highest, is the
 * current one: commit order, not id order, since two writers' ids need not commit in the order
 * they were made); `null_version` marks S3's `null` version (written while the bucket was never
 * versioned or Suspended; at most one per key), whose `version_id` stays the internal id its
 * manifest and shard headers carry. `objects` holds a row exactly when the newest version of the
 * key is not a delete marker, so ListObjects and conditional writes read it unchanged.
 * One schema serves both roles: in the '__buckets__' instance `buckets` is the bucket list; in a
 * bucket's instance it holds that bucket's own row, and no row means the bucket does not exist.
 * Schema 5: `access_log` and `access_log_batches`, server access log records waiting for delivery
 * (sql-access-log.ts).
 * Schema 6: no table changes; the ledger counts units by the backends holding their shards
 * (placement-counts.ts).
 * Schema 7: `reservations.key`, the key of the write in flight that reserved the unit, so an
 * on-line split moves a reservation with its key (sql-split.ts); rows of older releases have none.
 */
import type { ObjectManifest } from '../format/manifest.ts';
import type { BucketInfo, ObjectSummary, UploadInfo } from '../model/object-store.ts';
import { ACCESS_LOG_SCHEMA } from './sql-access-log.ts';
import type { UploadRecord } from './types.ts';

export const SCHEMA_VERSION = 7;

/** The ledger's counts and the repair worklist (sql-ledger.ts keeps both inside every commit). */
const LEDGER_SCHEMA = `
CREATE TABLE IF NOT EXISTS ledger (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS degraded_units (
  key TEXT NOT NULL, unit_id TEXT NOT NULL, missing TEXT NOT NULL, since INTEGER NOT NULL,
  spare INTEGER NOT NULL DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0, next_at INTEGER NOT NULL DEFAULT 0,
  sent_at INTEGER NOT NULL DEFAULT 0, last_error TEXT,
  PRIMARY KEY (unit_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS degraded_by_key ON degraded_units (key, unit_id);
CREATE INDEX IF NOT EXISTS degraded_order ON degraded_units (spare, attempts, since);
`;

export const SCHEMA =
  LEDGER_SCHEMA +
  ACCESS_LOG_SCHEMA +
  `
CREATE TABLE IF NOT EXISTS buckets (name TEXT PRIMARY KEY, region TEXT NOT NULL, created INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS objects (
  key TEXT PRIMARY KEY, version_id TEXT NOT NULL, etag TEXT NOT NULL, size INTEGER NOT NULL, last_modified TEXT NOT NULL,
  checksum TEXT
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS versions (
  key TEXT NOT NULL, version_id TEXT NOT NULL, delete_marker INTEGER NOT NULL DEFAULT 0, manifest TEXT NOT NULL,
  seq INTEGER NOT NULL DEFAULT 0, null_version INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (key, version_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS versions_by_seq ON versions (key, seq);
CREATE TABLE IF NOT EXISTS units (
  unit_id TEXT PRIMARY KEY, key TEXT NOT NULL, version_id TEXT NOT NULL, ordinal INTEGER NOT NULL,
  shards INTEGER NOT NULL, created_at INTEGER NOT NULL, checked_at INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS units_by_version ON units (key, version_id);
CREATE INDEX IF NOT EXISTS units_by_check ON units (checked_at, created_at);
CREATE TABLE IF NOT EXISTS uploads (
  upload_id TEXT PRIMARY KEY, key TEXT NOT NULL, initiated INTEGER NOT NULL, checksum TEXT, metadata TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS uploads_by_key ON uploads (key, upload_id);
CREATE TABLE IF NOT EXISTS parts (
  upload_id TEXT NOT NULL, part_number INTEGER NOT NULL, record TEXT NOT NULL, PRIMARY KEY (upload_id, part_number)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS garbage (id INTEGER PRIMARY KEY, not_before INTEGER NOT NULL, entry TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS garbage_due ON garbage (not_before, id);
CREATE TABLE IF NOT EXISTS reservations (unit_id TEXT PRIMARY KEY, expires INTEGER NOT NULL, key TEXT) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS reservations_due ON reservations (expires);
CREATE TABLE IF NOT EXISTS state (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS completed_uploads (upload_id TEXT PRIMARY KEY, completed INTEGER NOT NULL, result TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS completed_uploads_by_time ON completed_uploads (completed);
`;

export type BucketRow = { name: string; region: string; created: number };
export type ObjectRow = {
  key: string;
  version_id: string;
  etag: string;
  size: number;
  last_modified: string;
  checksum: string | null /** Read from the version's manifest by a listing (not a column). */;
  storage_class?: string | null;
};
export type UnitRow = { unit_id: string; key: string; version_id: string; ordinal: number };
export type UploadRow = { upload_id: string; key: string; initiated: number; checksum: string | null; metadata: string };
export type GarbageRow = { not_before: number; entry: string };

export const bucketInfo = (r: BucketRow): BucketInfo => ({ name: r.name, region: r.region, creationDate: new Date(r.created) });

export const objectRow = (key: string, m: ObjectManifest): ObjectRow => ({
  key,
  version_id: m.versionId,
  etag: m.etag,
  size: m.size,
  last_modified: m.lastModified,
  checksum: m.checksum ? JSON.stringify(m.checksum) : null,
});

export const objectSummary = (r: ObjectRow): ObjectSummary => ({
  key: r.key,
  size: r.size,
  etag: r.etag,
  lastModified: new Date(r.last_modified),
  checksum: r.checksum === null ? null : JSON.parse(r.checksum),
  ...(r.storage_class ? { storageClass: r.storage_class } : {}),
});

export const uploadInfo = (r: UploadRow): UploadInfo => ({
  key: r.key,
  uploadId: r.upload_id,
  initiated: new Date(r.initiated),
  checksum: r.checksum === null ? null : JSON.parse(r.checksum),
  ...uploadClassAndOwner(r.metadata),
});

/** The upload's storage class (absent: STANDARD) and its object's owner when not the bucket's (model/acl.ts), from its metadata. */
function uploadClassAndOwner(metadata: string): { storageClass?: string; owner?: string } {
  const m = JSON.parse(metadata) as { storageClass?: string; acl?: { owner?: string } };
  return { ...(m.storageClass ? { storageClass: m.storageClass } : {}), ...(m.acl?.owner ? { owner: m.acl.owner } : {}) };
}

export const uploadRecord = (r: UploadRow): UploadRecord => ({ ...uploadInfo(r), metadata: JSON.parse(r.metadata) });
