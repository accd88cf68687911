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
import { objectRow, objectSummary, type GarbageRow, type ObjectRow } from './sql-schema.ts';
import type { GarbageUnits } from './types.ts';

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

  get(key: string): ObjectManifest | null {
    const row = this.sql.exec<{ manifest: string }>('SELECT manifest FROM objects WHERE key = ?', key).toArray()[0];
    return row ? JSON.parse(row.manifest) : null;
  }

  /** Checks `conditions` against the current object, installs `manifest` and queues what it supersedes (plus `alsoUnused`). */
  commit(key: string, manifest: ObjectManifest, conditions: WriteConditions, graceMs: number, alsoUnused: CodedUnit[] = []): void {
    const previous = this.get(key);
    checkWriteConditions(previous ? { etag: previous.etag, lastModified: new Date(previous.lastModified) } : undefined, conditions, key);
    this.queueGarbage([...supersededUnits(previous, manifest), ...alsoUnused], Date.now() + graceMs);
    this.release(unitsOf(manifest));
    this.ledger.replace(key, previous, manifest);
    const r = objectRow(key, manifest);
    this.sql.exec(
      'INSERT OR REPLACE INTO objects (key, etag, size, last_modified, checksum, manifest) VALUES (?, ?, ?, ?, ?, ?)',
      r.key, r.etag, r.size, r.last_modified, r.checksum, r.manifest,
    );
  }

  setTags(key: string, tags: Tag[]): CodedUnit | null {
    const manifest = this.get(key);
    if (!manifest) throw new S3Error('NoSuchKey', undefined, { Key: key });
    const unit = withTagsRecorded(manifest, tags);
    this.sql.exec('UPDATE objects SET manifest = ? WHERE key = ?', JSON.stringify(manifest), key);
    return unit;
  }

  markMissing(key: string, unitId: string, shards: number[]): void {
    const manifest = this.get(key);
    if (!manifest || !withMissing(manifest, unitId, shards)) return;
    this.ledger.replace(key, this.get(key), manifest);
    this.sql.exec('UPDATE objects SET manifest = ? WHERE key = ?', JSON.stringify(manifest), key);
  }

  markRepaired(key: string, unitId: string, shards: number[]): void {
    const manifest = this.get(key);
    if (!manifest || !withRepaired(manifest, unitId, shards)) return;
    this.ledger.replace(key, this.get(key), manifest);
    this.sql.exec('UPDATE objects SET manifest = ? WHERE key = ?', JSON.stringify(manifest), key);
  }

  delete(key: string, ifMatch: string | undefined, graceMs: number): void {
    const previous = this.get(key);
    if (ifMatch !== undefined) checkWriteConditions(previous ? { etag: previous.etag, lastModified: new Date(previous.lastModified) } : undefined, { ifMatch }, key);
    if (!previous) return;
    this.queueGarbage(supersededUnits(previous, null), Date.now() + graceMs);
    this.ledger.replace(key, previous, null);
    this.sql.exec('DELETE FROM objects WHERE key = ?', key);
  }

  list(options: ListObjectsOptions): ListObjectsResult {
    const { prefix, delimiter, startAfter, maxKeys } = options;
    const fetch = (lower: Bound, upper: string | null, limit: number) =>
      this.sql
        .exec<ObjectRow>(
          `SELECT key, etag, size, last_modified, checksum FROM objects WHERE ${rangeWhere('key', lower, upper)} ORDER BY key LIMIT ?`,
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

  /** A small named value of the bucket's own bookkeeping (the scrubber's cursor). */
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
