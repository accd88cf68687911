/**
 * Brings a CatalogObject's SQLite storage to SCHEMA_VERSION when the instance starts, in one
 * transaction: an instance written by an older release opens with every object readable and
 * listable, and a failed migration leaves the old schema whole (the next start tries again).
 * The version is the `schema-version` state row; storage from before it had one is version 1.
 * Each step is tested against storage written by the release before it (test/catalog/
 * migration.test.ts, with fixtures that release wrote), never only against the new code.
 *
 * Version 1 (the first release): `objects` keyed by key with the manifest inline; the repair
 * worklist keyed by (key, unit id); the scrubber's cursor a key.
 * Version 2: objects addressed by version and units indexed (sql-schema.ts); the worklist keyed
 * by unit id; the scrubber walks units, so a pass in progress starts again from the first unit.
 * Version 3: S3 versioning: `versions` gains `seq` (commit order within a key) and `null_version`.
 * Every version stored before it was written by a release without versioning, so each is the
 * null version of its key and its only one (seq 1).
 * Version 4 (two changes, one release):
 * - the ledger counts every unit and its bytes per policy and shards missing (redundancy.ts).
 *   No table changes; the counts of what is already stored are taken once from every stored
 *   version's manifest, as commits have kept them since. Known gap: like version 2's step, this
 *   is one pass over every stored version at the instance's first start; a bucket of millions of
 *   versions would want it done in slices.
 * - the catalog journal (sql-journal.ts): its tables and triggers, created by createSchema. Nothing
 *   of the older storage changes; the journal's first generation starts with a dump of every
 *   journaled row, so what an older release wrote reaches the backends with the first segments
 *   (test/catalog/migration-v3-journal.test.ts).
 * Version 5: server access logging's tables (sql-access-log.ts: records waiting for delivery and
 * the batches claimed), created by createSchema. Nothing of the older storage changes: an
 * instance starts with no records waiting (test/catalog/migration-v4-access-log.test.ts).
 * Version 6 (issue 37): the ledger counts every unit and its bytes by the backends its present
 * shards are on (placement-counts.ts), so the status can count shards on a backend that is down
 * as missing. No table changes; like version 4's step, the counts of what is already stored are
 * taken once from every stored version's manifest (test/catalog/migration-v5-placements.test.ts).
 * Version 7 (issue 39): `reservations` gains `key`, the key of the write that reserved the unit, so
 * an on-line split moves a write in flight with its key (sql-split.ts). Rows written before have
 * none: a split waits until they are committed or expired (minutes), and nothing else reads the
 * column (test/catalog/migration-v6-reservations.test.ts).
 *
 * SSE-C ETags (issue 37; a fix-up marked by its own state row `sse-c-etags`, not a schema
 * version, since no table changes): every stored SSE-C version's ETag, the MD5 of its plaintext
 * (or of its parts' MD5s), becomes model/sse.ts `etagFor` of it, in its manifest and in the
 * current-version row listings read, as new writes store it. One pass over the versions holding
 * an SSE-C record, at the instance's first start under this release
 * (test/catalog/migration-sse-c-etags.test.ts, over storage commit 77cbe02 wrote). Parts of uploads
 * in progress keep the ETags their clients were given (CompleteMultipartUpload names them).
 *
 * Class counts (issue 44; a fix-up marked by its state row `class-counts`): the ledger counts the
 * versions, bytes and stored bytes of each storage class other than STANDARD (usage.ts), so the
 * status shows bytes per class without a scan. Versions stored before the counts (classed ones
 * written by a release with classes but without the counts) are counted once from their
 * manifests at the instance's first start under this release (a new instance's first restart
 * counts again what its commits counted: the same figures).
 */
import type { ObjectManifest } from '../format/manifest.ts';
import { placementEntries } from './placement-counts.ts';
import { etagFor } from '../model/sse.ts';
import { redundancyEntries } from './redundancy.ts';
import { unitsOf } from './rules.ts';
import { classEntries } from './usage.ts';
import { JOURNAL_SCHEMA } from './journal-schema.ts';
import { SCHEMA, SCHEMA_VERSION } from './sql-schema.ts';

const VERSION_ROW = 'schema-version';

/** The schema version of storage that has tables (1 before versions were recorded). */
export function schemaVersion(sql: SqlStorage): number {
  const row = sql.exec<{ value: string }>('SELECT value FROM state WHERE name = ?', VERSION_ROW).toArray()[0];
  return row ? Number(row.value) : 1;
}

/** Creates the tables of a new instance at the current version. */
export function createSchema(sql: SqlStorage): void {
  sql.exec(SCHEMA);
  sql.exec(JOURNAL_SCHEMA);
  sql.exec('INSERT OR REPLACE INTO state (name, value) VALUES (?, ?)', VERSION_ROW, String(SCHEMA_VERSION));
}

/** Migrates existing storage to the current version; returns the version it found. Call inside a transaction. */
export function migrate(sql: SqlStorage, now = Date.now()): number {
  const found = schemaVersion(sql);
  if (found > SCHEMA_VERSION) throw new Error(`catalog storage is at schema ${found}, newer than this release's ${SCHEMA_VERSION}: deploy the newer release`);
  if (found < 2) toVersion2(sql, now);
  if (found < 3) toVersion3(sql);
  if (found < 4) toVersion4(sql);
  if (found < 6) toVersion6(sql);
  if (found < 7) toVersion7(sql);
  createSchema(sql); // idempotent: tables and indexes of the current version
  opaqueSseCEtags(sql);
  countClasses(sql);
  return found;
}

const SSE_C_ETAGS_ROW = 'sse-c-etags';
const CLASS_COUNTS_ROW = 'class-counts';

/** The class counts above: once per instance. */
function countClasses(sql: SqlStorage): void {
  if (sql.exec('SELECT 1 FROM state WHERE name = ?', CLASS_COUNTS_ROW).toArray().length) return;
  sql.exec("DELETE FROM ledger WHERE name LIKE 'class-%'"); // a retried fix-up counts once
  const counts = new Map<string, number>();
  const rows = sql.exec<{ manifest: string }>('SELECT manifest FROM versions WHERE delete_marker = 0 AND manifest LIKE \'%"storageClass"%\'').toArray();
  for (const row of rows) for (const [name, n] of classEntries(JSON.parse(row.manifest) as ObjectManifest)) counts.set(name, (counts.get(name) ?? 0) + n);
  for (const [name, n] of counts) sql.exec('INSERT INTO ledger (name, value) VALUES (?, ?)', name, n);
  sql.exec('INSERT OR REPLACE INTO state (name, value) VALUES (?, ?)', CLASS_COUNTS_ROW, String(rows.length));
}

/** The SSE-C fix-up above: once per instance (a new instance has nothing to rewrite and is marked at once). */
function opaqueSseCEtags(sql: SqlStorage): void {
  if (sql.exec('SELECT 1 FROM state WHERE name = ?', SSE_C_ETAGS_ROW).toArray().length) return;
  const rows = sql
    .exec<{ key: string; version_id: string; manifest: string }>(
      'SELECT key, version_id, manifest FROM versions WHERE delete_marker = 0 AND manifest LIKE \'%"fingerprint"%\'',
    )
    .toArray();
  for (const row of rows) {
    const m = JSON.parse(row.manifest) as ObjectManifest;
    const sse = m.metadata.sse;
    const plain = /^"([0-9a-f]{32})(-\d+)?"$/.exec(m.etag);
    if (sse?.kind !== 'c' || !plain) continue;
    const etag = etagFor(plain[1]!, sse).replace(/"$/, `${plain[2] ?? ''}"`);
    sql.exec('UPDATE versions SET manifest = ? WHERE key = ? AND version_id = ?', JSON.stringify({ ...m, etag }), row.key, row.version_id);
    sql.exec('UPDATE objects SET etag = ? WHERE key = ? AND version_id = ?', etag, row.key, row.version_id);
  }
  sql.exec('INSERT OR REPLACE INTO state (name, value) VALUES (?, ?)', SSE_C_ETAGS_ROW, String(rows.length));
}

function toVersion2(sql: SqlStorage, now: number): void {
  sql.exec(`CREATE TABLE objects_v2 (
    key TEXT PRIMARY KEY, version_id TEXT NOT NULL, etag TEXT NOT NULL, size INTEGER NOT NULL, last_modified TEXT NOT NULL,
    checksum TEXT
  ) WITHOUT ROWID`);
  sql.exec(`CREATE TABLE IF NOT EXISTS versions (
    key TEXT NOT NULL, version_id TEXT NOT NULL, delete_marker INTEGER NOT NULL DEFAULT 0, manifest TEXT NOT NULL,
    PRIMARY KEY (key, version_id)
  ) WITHOUT ROWID`);
  sql.exec(`CREATE TABLE IF NOT EXISTS units (
    unit_id TEXT PRIMARY KEY, key TEXT NOT NULL, version_id TEXT NOT NULL, ordinal INTEGER NOT NULL,
    shards INTEGER NOT NULL, created_at INTEGER NOT NULL, checked_at INTEGER NOT NULL DEFAULT 0
  ) WITHOUT ROWID`);
  type V1Object = { key: string; etag: string; size: number; last_modified: string; checksum: string | null; manifest: string };
  for (const row of sql.exec<V1Object>('SELECT * FROM objects').toArray()) {
    const manifest = JSON.parse(row.manifest) as ObjectManifest;
    sql.exec(
      'INSERT INTO objects_v2 (key, version_id, etag, size, last_modified, checksum) VALUES (?, ?, ?, ?, ?, ?)',
      row.key,
      manifest.versionId,
      row.etag,
      row.size,
      row.last_modified,
      row.checksum,
    );
    sql.exec('INSERT INTO versions (key, version_id, delete_marker, manifest) VALUES (?, ?, 0, ?)', row.key, manifest.versionId, row.manifest);
    const created = Date.parse(manifest.lastModified) || now;
    unitsOf(manifest).forEach((u, i) => {
      sql.exec(
        'INSERT INTO units (unit_id, key, version_id, ordinal, shards, created_at, checked_at) VALUES (?, ?, ?, ?, ?, ?, 0)',
        u.unitId,
        row.key,
        manifest.versionId,
        i,
        u.k + u.m,
        created,
      );
    });
  }
  sql.exec('DROP TABLE objects');
  sql.exec('ALTER TABLE objects_v2 RENAME TO objects');

  // The worklist: one row per unit (a unit id is unique in the bucket), its place in line kept.
  sql.exec(`CREATE TABLE degraded_v2 (
    key TEXT NOT NULL, unit_id TEXT NOT NULL, missing TEXT NOT NULL, since INTEGER NOT NULL,
    spare INTEGER NOT NULL DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0, next_at INTEGER NOT NULL DEFAULT 0,
    sent_at INTEGER NOT NULL DEFAULT 0, last_error TEXT,
    PRIMARY KEY (unit_id)
  ) WITHOUT ROWID`);
  sql.exec(`INSERT OR REPLACE INTO degraded_v2 (key, unit_id, missing, since, spare, attempts, next_at, sent_at, last_error)
    SELECT key, unit_id, missing, since, spare, attempts, next_at, sent_at, last_error FROM degraded_units`);
  sql.exec('DROP TABLE degraded_units');
  sql.exec('ALTER TABLE degraded_v2 RENAME TO degraded_units');

  // The scrubber: its key cursor means nothing to a walk over units; the pass in progress starts
  // again (complete passes stay counted), and every unit counts as not yet checked.
  sql.exec("DELETE FROM state WHERE name IN ('scrub-cursor', 'scrub-position')");
  const progress = sql.exec<{ value: string }>("SELECT value FROM state WHERE name = 'scrub-progress'").toArray()[0];
  if (progress) {
    const p = JSON.parse(progress.value) as { lastPassStartedAt?: number | null; lastPassCompletedAt?: number | null; passes?: number };
    const kept = {
      passStartedAt: null,
      lastPassStartedAt: p.lastPassStartedAt ?? null,
      lastPassCompletedAt: p.lastPassCompletedAt ?? null,
      passes: p.passes ?? 0,
    };
    sql.exec("UPDATE state SET value = ? WHERE name = 'scrub-progress'", JSON.stringify(kept));
  }
}

function toVersion3(sql: SqlStorage): void {
  sql.exec('ALTER TABLE versions ADD COLUMN seq INTEGER NOT NULL DEFAULT 0');
  sql.exec('ALTER TABLE versions ADD COLUMN null_version INTEGER NOT NULL DEFAULT 0');
  sql.exec('UPDATE versions SET seq = 1, null_version = 1');
}

function toVersion4(sql: SqlStorage): void {
  sql.exec('CREATE TABLE IF NOT EXISTS ledger (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID');
  sql.exec("DELETE FROM ledger WHERE name LIKE 'units:%' OR name LIKE 'unit-bytes:%'"); // a retried migration counts once
  const counts = new Map<string, number>();
  for (const row of sql.exec<{ manifest: string }>('SELECT manifest FROM versions WHERE delete_marker = 0').toArray()) {
    for (const u of unitsOf(JSON.parse(row.manifest) as ObjectManifest)) {
      for (const [name, n] of redundancyEntries(u)) counts.set(name, (counts.get(name) ?? 0) + n);
    }
  }
  for (const [name, n] of counts) sql.exec('INSERT INTO ledger (name, value) VALUES (?, ?)', name, n);
}

function toVersion7(sql: SqlStorage): void {
  const columns = sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('reservations')").toArray();
  if (!columns.some((c) => c.name === 'key')) sql.exec('ALTER TABLE reservations ADD COLUMN key TEXT');
}

function toVersion6(sql: SqlStorage): void {
  sql.exec("DELETE FROM ledger WHERE name LIKE 'placed-units:%' OR name LIKE 'placed-bytes:%'"); // a retried migration counts once
  const counts = new Map<string, number>();
  for (const row of sql.exec<{ manifest: string }>('SELECT manifest FROM versions WHERE delete_marker = 0').toArray()) {
    for (const u of unitsOf(JSON.parse(row.manifest) as ObjectManifest)) {
      for (const [name, n] of placementEntries(u)) counts.set(name, (counts.get(name) ?? 0) + n);
    }
  }
  for (const [name, n] of counts) sql.exec('INSERT INTO ledger (name, value) VALUES (?, ?)', name, n);
}
