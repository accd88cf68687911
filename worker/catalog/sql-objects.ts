/**
 * The objects and garbage of one bucket's CatalogObject, over its SQLite storage. Every method
 * is synchronous: CatalogObject calls them inside one transactionSync, so a check and the write
 * that depends on it cannot interleave with another request.
 * Listing pages through the primary key in order (`key > ? ORDER BY key LIMIT ?`) and leaves a
 * common prefix with one range jump (range-list.ts); it never reads the whole table.
 */
import type { CodedUnit, ObjectManifest } from '../format/manifest.ts';
import { checkWriteConditions } from '../model/conditions.ts';
import { S3Error } from '../model/errors.ts';
import type { Tag } from '../model/tagging.ts';
import type { ListObjectsOptions, ListObjectsResult, WriteConditions } from '../model/object-store.ts';
import { afterKey, listRanges, objectsResult, startBound, type Bound } from './range-list.ts';
import { supersededUnits, unitsOf, withMissing, withRepaired, withTagsRecorded } from './rules.ts';
import { SqlLedger } from './sql-ledger.ts';
import { objectRow, objectSummary, type GarbageRow, type ObjectRow, type UnitRow } from './sql-schema.ts';
import type { GarbageUnits, UnitRecord } from './types.ts';

/** `column > ?` or `column >= ?` for a bound, plus `column < ?` when there is an upper end. */
export function rangeWhere(column: string, lower: Bound, upper: string | null): string {
  return `${column} ${lower.inclusive ? '>=' : '>'} ?` + (upper === null ? '' : ` AND ${column} < ?`);
}

export class SqlObjects {
  /** The bucket's counts, kept with every change below (bucket health). */
  readonly ledger: SqlLedger;

  constructor(
    private readonly sql: SqlStorage,
    private readonly bucket: string,
  ) {
    this.ledger = new SqlLedger(sql);
  }

  /** The manifest of the key's current version, or null. */
  get(key: string): ObjectManifest | null {
    const row = this.sql.exec<{ manifest: string }>(
      'SELECT v.manifest FROM objects o JOIN versions v ON v.key = o.key AND v.version_id = o.version_id WHERE o.key = ?', key,
    ).toArray()[0];
    return row ? JSON.parse(row.manifest) : null;
  }

  /** The manifest of one stored version, or null. */
  version(key: string, versionId: string): ObjectManifest | null {
    const row = this.sql.exec<{ manifest: string }>('SELECT manifest FROM versions WHERE key = ? AND version_id = ? AND delete_marker = 0', key, versionId).toArray()[0];
    return row ? JSON.parse(row.manifest) : null;
  }

  /** Checks `conditions` against the current object, installs `manifest` and queues what it supersedes (plus `alsoUnused`). */
  commit(key: string, manifest: ObjectManifest, conditions: WriteConditions, graceMs: number, alsoUnused: CodedUnit[] = []): void {
    const previous = this.get(key);
    checkWriteConditions(previous ? { etag: previous.etag, lastModified: new Date(previous.lastModified) } : undefined, conditions, key);
    this.queueGarbage([...supersededUnits(previous, manifest), ...alsoUnused], Date.now() + graceMs);
    this.release(unitsOf(manifest));
    this.ledger.replace(key, previous, manifest);
    if (previous) this.dropVersion(key, previous.versionId); // one version per key until versioning
    this.storeVersion(key, manifest);
    const r = objectRow(key, manifest);
    this.sql.exec(
      'INSERT OR REPLACE INTO objects (key, version_id, etag, size, last_modified, checksum) VALUES (?, ?, ?, ?, ?, ?)',
      r.key, r.version_id, r.etag, r.size, r.last_modified, r.checksum,
    );
  }

  private storeVersion(key: string, manifest: ObjectManifest): void {
    this.sql.exec('INSERT OR REPLACE INTO versions (key, version_id, delete_marker, manifest) VALUES (?, ?, 0, ?)', key, manifest.versionId, JSON.stringify(manifest));
    const now = Date.now();
    unitsOf(manifest).forEach((u, i) => {
      this.sql.exec(
        'INSERT OR REPLACE INTO units (unit_id, key, version_id, ordinal, shards, created_at, checked_at) VALUES (?, ?, ?, ?, ?, ?, 0)',
        u.unitId, key, manifest.versionId, i, u.k + u.m, now,
      );
    });
  }

  private dropVersion(key: string, versionId: string): void {
    this.sql.exec('DELETE FROM units WHERE key = ? AND version_id = ?', key, versionId);
    this.sql.exec('DELETE FROM versions WHERE key = ? AND version_id = ?', key, versionId);
  }

  /** Rewrites a stored version's manifest in place (tags, shard states): same version, same units. */
  private rewrite(key: string, manifest: ObjectManifest): void {
    this.sql.exec('UPDATE versions SET manifest = ? WHERE key = ? AND version_id = ?', JSON.stringify(manifest), key, manifest.versionId);
  }

  setTags(key: string, tags: Tag[]): CodedUnit | null {
    const manifest = this.get(key);
    if (!manifest) throw new S3Error('NoSuchKey', undefined, { Key: key });
    const unit = withTagsRecorded(manifest, tags);
    this.rewrite(key, manifest);
    return unit;
  }

  /** The unit index's entry for `unitId`, with the unit as its version's manifest records it; null if not stored. */
  unit(unitId: string): UnitRecord | null {
    const row = this.unitRow(unitId);
    return row ? this.unitRecords([row])[0] ?? null : null;
  }

  private unitRow(unitId: string): UnitRow | undefined {
    return this.sql.exec<UnitRow>('SELECT unit_id, key, version_id, ordinal FROM units WHERE unit_id = ?', unitId).toArray()[0];
  }

  /** Units in id order after `afterUnit` (null: from the first), at most `limit`. */
  units(afterUnit: string | null, limit: number): UnitRecord[] {
    const rows = afterUnit === null
      ? this.sql.exec<UnitRow>('SELECT unit_id, key, version_id, ordinal FROM units ORDER BY unit_id LIMIT ?', limit).toArray()
      : this.sql.exec<UnitRow>('SELECT unit_id, key, version_id, ordinal FROM units WHERE unit_id > ? ORDER BY unit_id LIMIT ?', afterUnit, limit).toArray();
    return this.unitRecords(rows);
  }

  /** Each version's manifest is parsed once, however many of its units are asked for. */
  private unitRecords(rows: UnitRow[]): UnitRecord[] {
    const manifests = new Map<string, ObjectManifest | null>();
    const out: UnitRecord[] = [];
    for (const r of rows) {
      const id = `${r.version_id}\u0000${r.key}`;
      if (!manifests.has(id)) manifests.set(id, this.version(r.key, r.version_id));
      const unit = unitsOf(manifests.get(id))[r.ordinal];
      if (unit?.unitId === r.unit_id) out.push({ unitId: r.unit_id, key: r.key, versionId: r.version_id, ordinal: r.ordinal, unit });
    }
    return out;
  }

  /** Records that every shard of these units was checked at `now`. */
  checked(unitIds: string[], now: number): void {
    for (const id of unitIds) this.sql.exec('UPDATE units SET checked_at = ? WHERE unit_id = ?', now, id);
  }

  markMissing(unitId: string, shards: number[]): void {
    this.changeUnit(unitId, (m) => withMissing(m, unitId, shards));
  }

  markRepaired(unitId: string, shards: number[]): void {
    this.changeUnit(unitId, (m) => withRepaired(m, unitId, shards));
  }

  /** Applies `change` to the manifest of the version holding `unitId` (nothing if it is gone or nothing changed). */
  private changeUnit(unitId: string, change: (m: ObjectManifest) => boolean): void {
    const row = this.unitRow(unitId);
    if (!row) return;
    const before = this.version(row.key, row.version_id);
    if (!before) return;
    const after = structuredClone(before);
    if (!change(after)) return;
    this.ledger.replace(row.key, before, after);
    this.rewrite(row.key, after);
  }

  delete(key: string, ifMatch: string | undefined, graceMs: number): void {
    const previous = this.get(key);
    if (ifMatch !== undefined) checkWriteConditions(previous ? { etag: previous.etag, lastModified: new Date(previous.lastModified) } : undefined, { ifMatch }, key);
    if (!previous) return;
    this.queueGarbage(supersededUnits(previous, null), Date.now() + graceMs);
    this.ledger.replace(key, previous, null);
    this.dropVersion(key, previous.versionId);
    this.sql.exec('DELETE FROM objects WHERE key = ?', key);
  }

  list(options: ListObjectsOptions): ListObjectsResult {
    const { prefix, delimiter, startAfter, maxKeys } = options;
    const fetch = (lower: Bound, upper: string | null, limit: number) =>
      this.sql
        .exec<ObjectRow>(
          `SELECT key, version_id, etag, size, last_modified, checksum FROM objects WHERE ${rangeWhere('key', lower, upper)} ORDER BY key LIMIT ?`,
          ...(upper === null ? [lower.key] : [lower.key, upper]), limit,
        )
        .toArray();
    const page = listRanges(fetch, afterKey, { prefix, delimiter, start: startBound(prefix, delimiter, startAfter), maxEntries: maxKeys });
    return objectsResult({ ...page, entries: page.entries.map((e) => (e.kind === 'key' ? { ...e, value: objectSummary(e.value) } : e)) });
  }

  hasObjectsOrUploads(): boolean {
    return this.sql.exec('SELECT 1 FROM objects LIMIT 1').toArray().length + this.sql.exec('SELECT 1 FROM uploads LIMIT 1').toArray().length > 0;
  }

  queueGarbage(units: CodedUnit[], notBefore: number): void {
    if (units.length > 0) queueGarbage(this.sql, { bucket: this.bucket, units }, notBefore);
  }

  /** A small named value of the bucket's own bookkeeping (the scrubber's cursor, CORS, tags). */
  getState(name: string): string | null {
    return this.sql.exec<{ value: string }>('SELECT value FROM state WHERE name = ?', name).toArray()[0]?.value ?? null;
  }

  setState(name: string, value: string | null): void {
    if (value === null) this.sql.exec('DELETE FROM state WHERE name = ?', name);
    else this.sql.exec('INSERT OR REPLACE INTO state (name, value) VALUES (?, ?)', name, value);
  }

  /** A write's first step: `conditions` checked against the current object, then its unit ids reserved. */
  prepare(key: string, conditions: WriteConditions, unitIds: string[], expires: number): void {
    const current = this.get(key);
    checkWriteConditions(current ? { etag: current.etag, lastModified: new Date(current.lastModified) } : undefined, conditions, key);
    this.reserve(unitIds, expires);
  }

  reserve(unitIds: string[], expires: number): void {
    for (const id of unitIds) this.sql.exec('INSERT OR REPLACE INTO reservations (unit_id, expires) VALUES (?, ?)', id, expires);
  }

  /** The units are referenced now (or were never written): their reservations end. */
  release(units: Pick<CodedUnit, 'unitId'>[]): void {
    for (const u of units) this.sql.exec('DELETE FROM reservations WHERE unit_id = ?', u.unitId);
  }
}

export function queueGarbage(sql: SqlStorage, entry: GarbageUnits, notBefore: number): void {
  sql.exec('INSERT INTO garbage (not_before, entry) VALUES (?, ?)', notBefore, JSON.stringify(entry));
}

/**
 * Removes and returns up to `limit` entries due at `now`, oldest first; then the reservations
 * expired at `now` (at most `limit` of them) as one entry of `bucket` (a bucket's instance holds
 * one bucket). Entries that could not be collected come back through queueGarbage.
 */
export function takeDueGarbage(sql: SqlStorage, now: number, limit: number, bucket: string | undefined): GarbageUnits[] {
  const rows = sql.exec<{ id: number; entry: string }>('SELECT id, entry FROM garbage WHERE not_before <= ? ORDER BY not_before, id LIMIT ?', now, limit).toArray();
  for (const r of rows) sql.exec('DELETE FROM garbage WHERE id = ?', r.id);
  const taken: GarbageUnits[] = rows.map((r) => JSON.parse(r.entry));
  if (bucket === undefined || taken.length >= limit) return taken;
  const expired = sql.exec<{ unit_id: string }>('SELECT unit_id FROM reservations WHERE expires <= ? ORDER BY expires LIMIT ?', now, limit).toArray();
  for (const r of expired) sql.exec('DELETE FROM reservations WHERE unit_id = ?', r.unit_id);
  if (expired.length) taken.push({ bucket, units: [], unitIds: expired.map((r) => r.unit_id) });
  return taken;
}

/** Pending garbage and reservations (as garbage due at their expiry), for a retiring bucket's hand-over. */
export function allGarbage(sql: SqlStorage, bucket: string): GarbageRow[] {
  const rows = sql.exec<GarbageRow>('SELECT not_before, entry FROM garbage ORDER BY id').toArray();
  const reserved = sql.exec<{ unit_id: string; expires: number }>('SELECT unit_id, expires FROM reservations ORDER BY expires').toArray();
  const entry = (ids: string[]): string => JSON.stringify({ bucket, units: [], unitIds: ids } satisfies GarbageUnits);
  return [...rows, ...reserved.map((r) => ({ not_before: r.expires, entry: entry([r.unit_id]) }))];
}
