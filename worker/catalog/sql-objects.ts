/**
 * The objects and garbage of one bucket's CatalogObject, over its SQLite storage. Every method
 * is synchronous: CatalogObject calls them inside one transactionSync, so a check and the write
 * that depends on it cannot interleave with another request.
 * Listing pages through the primary key in order (`key > ? ORDER BY key LIMIT ?`) and leaves a
 * common prefix with one range jump (range-list.ts); it never reads the whole table.
 * Versioning (S3's rules, docs/COMPATIBILITY.md "Versioning"): a bucket never versioned keeps
 * one null version per key and writes exactly the rows it wrote before versioning existed.
 * Object Lock (model/object-lock.ts, docs/COMPATIBILITY.md "Object Lock"): a version's lock is in
 * its metadata, a bucket's configuration in its `object-lock` state row; removeVersion and commit
 * refuse to remove or replace a locked version, and takeDueGarbage never hands over its units.
 */
import type { CodedUnit, ObjectManifest } from '../format/manifest.ts';
import { checkDeleteConditions, checkWriteConditions, type DeleteTarget } from '../model/conditions.ts';
import { S3Error } from '../model/errors.ts';
import type { Tag } from '../model/tagging.ts';
import { withAcl, type StoredObjectAcl } from '../model/acl.ts';
import { objectExpiration, type LifecycleRule, type ObjectExpiration } from '../model/lifecycle.ts';
import { LIFECYCLE, LIFECYCLE_SET_AT, readRules } from './sql-lifecycle.ts';
import type {
  DeleteConditions,
  DeleteObjectResult,
  ListObjectsOptions,
  ListObjectsResult,
  ListVersionsOptions,
  ListVersionsResult,
  VersioningStatus,
  WriteConditions,
} from '../model/object-store.ts';
import { newId } from '../format/ids.ts';
import {
  assertRemovable,
  assertRetentionChange,
  compactLock,
  lockRefusal,
  withDefaultRetention,
  type DefaultRetention,
  type LegalHoldStatus,
  type ObjectLockConfig,
  type Retention,
} from '../model/object-lock.ts';
import { afterKey, listRanges, objectsResult, startBound, type Bound } from './range-list.ts';
import {
  supersededUnits,
  tooManyVersions,
  unitsOf,
  withMissing,
  withMovedShard,
  withRepaired,
  withTagsRecorded,
  type CatalogWriteConditions,
} from './rules.ts';
import { SqlLedger } from './sql-ledger.ts';
import { readState, writeState } from './sql-state.ts';
import { objectRow, objectSummary, type GarbageRow, type ObjectRow, type UnitRow } from './sql-schema.ts';
import type { CommitResult, GarbageUnits, MovedShard, ShardMove, UnitRecord, VersionLookup } from './types.ts';
import { listVersionRows, NULL_VERSION, shownVersionId, type VersionRow } from './sql-versions.ts';

/** The state row of the bucket's versioning status ('Enabled' | 'Suspended'; none: never configured). */
const VERSIONING = 'versioning';
/** The state row of a lock-enabled bucket's ObjectLockConfig (none: Object Lock not enabled, for good). */
const OBJECT_LOCK = 'object-lock';

const missingLockConfiguration = () => new S3Error('InvalidRequest', 'Bucket is missing Object Lock Configuration');

/** What a conditional delete compares with (model/conditions.ts checkDeleteConditions). */
const deleteTarget = (m: ObjectManifest): DeleteTarget => ({ kind: 'object', etag: m.etag, size: m.size, lastModified: new Date(m.lastModified) });

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
    const row = this.sql
      .exec<{ manifest: string }>('SELECT v.manifest FROM objects o JOIN versions v ON v.key = o.key AND v.version_id = o.version_id WHERE o.key = ?', key)
      .toArray()[0];
    return row ? JSON.parse(row.manifest) : null;
  }

  /** The manifest of one stored version, or null. */
  version(key: string, versionId: string): ObjectManifest | null {
    const row = this.sql
      .exec<{ manifest: string }>('SELECT manifest FROM versions WHERE key = ? AND version_id = ? AND delete_marker = 0', key, versionId)
      .toArray()[0];
    return row ? JSON.parse(row.manifest) : null;
  }

  /** The bucket's versioning state (a state row; none: never configured). */
  versioning(): VersioningStatus | null {
    return this.getState(VERSIONING) as VersioningStatus | null;
  }

  /** S3 refuses to suspend versioning on a lock-enabled bucket (InvalidBucketState). */
  setVersioning(status: VersioningStatus): void {
    if (status !== 'Enabled' && this.objectLock())
      throw new S3Error('InvalidBucketState', 'An Object Lock configuration is present on this bucket, so the versioning state cannot be changed.');
    this.setState(VERSIONING, status);
  }

  /** The bucket's Object Lock configuration (null: lock not enabled). */
  objectLock(): ObjectLockConfig | null {
    const value = this.getState(OBJECT_LOCK);
    return value === null ? null : (JSON.parse(value) as ObjectLockConfig);
  }

  /** CreateBucket with x-amz-bucket-object-lock-enabled: lock on, versioning Enabled (both for good). */
  enableObjectLock(): void {
    this.setState(VERSIONING, 'Enabled');
    if (!this.objectLock()) this.setState(OBJECT_LOCK, JSON.stringify({ rule: null } satisfies ObjectLockConfig));
  }

  /** PutObjectLockConfiguration: the default retention; enabling lock needs versioning Enabled (InvalidBucketState). */
  setObjectLock(rule: DefaultRetention | null): void {
    if (!this.objectLock() && this.versioning() !== 'Enabled') {
      throw new S3Error('InvalidBucketState', "Versioning must be 'Enabled' on the bucket to apply a Object Lock configuration");
    }
    this.setState(OBJECT_LOCK, JSON.stringify({ rule } satisfies ObjectLockConfig));
  }

  /** A write naming a retention or legal hold needs a lock-enabled bucket (InvalidRequest, as S3). */
  assertLockable(metadata: ObjectManifest['metadata']): void {
    if (metadata.objectLock && !this.objectLock()) throw missingLockConfiguration();
  }

  /**
   * PutObjectRetention / PutObjectLegalHold on the current version or `versionId`: rewritten in
   * place (same version, same units). A retention change follows assertRetentionChange
   * (AccessDenied); `retention` null removes it (with bypass for a running GOVERNANCE one).
   */
  changeObjectLock(key: string, versionId: string | undefined, change: { retention?: Retention | null; legalHold?: LegalHoldStatus }, bypass: boolean): void {
    if (!this.objectLock()) throw missingLockConfiguration();
    const found = this.lookup(key, versionId ?? null);
    if (found.kind !== 'object')
      throw versionId === undefined
        ? new S3Error('NoSuchKey', undefined, { Key: key })
        : new S3Error('NoSuchVersion', undefined, { Key: key, VersionId: versionId });
    const { manifest } = found;
    const { objectLock: lock, ...rest } = manifest.metadata;
    let next = { ...lock };
    if (change.retention !== undefined) {
      assertRetentionChange(lock, change.retention, bypass, Date.now());
      const { mode: _m, retainUntil: _r, ...kept } = next;
      next = change.retention ? { ...kept, mode: change.retention.mode, retainUntil: change.retention.retainUntil } : kept;
    }
    if (change.legalHold !== undefined) next.legalHold = change.legalHold;
    const compact = compactLock(next);
    manifest.metadata = compact ? { ...rest, objectLock: compact } : rest;
    this.rewrite(key, manifest);
  }

  /** The bucket's lifecycle rules (a state row; none: no configuration). */
  lifecycle(): LifecycleRule[] | null {
    return readRules(this.getState(LIFECYCLE));
  }

  /** Replaces the rules and records when (the job lets a new configuration settle first). */
  setLifecycle(rules: LifecycleRule[] | null): void {
    this.setState(LIFECYCLE, rules === null ? null : JSON.stringify(rules));
    this.setState(LIFECYCLE_SET_AT, rules === null ? null : JSON.stringify(Date.now()));
  }

  /** When the rules were stored (ms), null when unknown (stored before this was recorded) or none. */
  lifecycleSetAt(): number | null {
    const value = this.getState(LIFECYCLE_SET_AT);
    return value === null ? null : (JSON.parse(value) as number);
  }

  /**
   * Checks `conditions` against the current object and installs `manifest` as the key's newest
   * version; queues what it supersedes (plus `alsoUnused`). Versioning Enabled supersedes
   * nothing: older versions keep their units. Otherwise the new version is the null version and
   * replaces the key's null version, wherever it stands among the versions (S3's rule).
   * Answers the version id S3 sends back (only an Enabled bucket's writes have one) and when a
   * lifecycle rule will expire the new version (x-amz-expiration, as GET and HEAD state it).
   */
  commit(key: string, written: ObjectManifest, conditions: CatalogWriteConditions, graceMs: number, alsoUnused: CodedUnit[] = []): CommitResult {
    const status = this.versioning();
    const previous = this.get(key);
    checkWriteConditions(previous ? { etag: previous.etag, lastModified: new Date(previous.lastModified) } : undefined, conditions, key);
    const manifest = this.withBucketLock(written);
    const replaced = status === 'Enabled' ? undefined : this.versionRow(key, 'null');
    if (conditions.maxVersions !== undefined && this.versionCount(key) - (replaced ? 1 : 0) >= conditions.maxVersions)
      throw tooManyVersions(key, conditions.maxVersions);
    const replacedManifest = replaced && !replaced.delete_marker ? (JSON.parse(replaced.manifest) as ObjectManifest) : null;
    // A locked version is never overwritten in place (only a lock-enabled bucket has locked versions,
    // and it stays Enabled, so this guards storage that broke that rule).
    if (replacedManifest) assertRemovable(replacedManifest.metadata.objectLock, false, Date.now());
    this.queueGarbage([...supersededUnits(replacedManifest, manifest), ...alsoUnused], Date.now() + graceMs);
    this.release(unitsOf(manifest));
    this.ledger.replace(key, replacedManifest, manifest);
    if (replaced) this.dropVersion(key, replaced.version_id);
    this.storeVersion(key, manifest, status !== 'Enabled');
    this.setCurrent(key, manifest);
    // Suspended: the write is the null version, but S3 (and the suite) send no x-amz-version-id for it.
    const expiration = this.expiration(key, manifest);
    return { ...(status === 'Enabled' ? { versionId: manifest.versionId } : {}), ...(expiration ? { expiration } : {}) };
  }

  /**
   * When the bucket's lifecycle rules will expire `manifest` as the key's current version (null:
   * no rule, or none that applies): read inside the caller's transaction, so the reads and the
   * writes that state it (x-amz-expiration) cost no catalog call of their own.
   */
  private expiration(key: string, manifest: ObjectManifest): ObjectExpiration | null {
    const rules = this.lifecycle();
    return rules && objectExpiration(rules, key, { lastModified: Date.parse(manifest.lastModified), size: manifest.size, tags: manifest.metadata.tags ?? [] });
  }

  /**
   * The bucket's lock applied to a version being committed: InvalidRequest when it names a lock
   * the bucket does not have; the default retention when it names no retention of its own,
   * counted from the commit (S3 counts from the version's creation).
   */
  private withBucketLock(manifest: ObjectManifest): ObjectManifest {
    this.assertLockable(manifest.metadata);
    const config = this.objectLock();
    if (!config) return manifest;
    const lock = withDefaultRetention(manifest.metadata.objectLock, config, Date.now());
    return lock === manifest.metadata.objectLock ? manifest : { ...manifest, metadata: { ...manifest.metadata, objectLock: lock! } };
  }

  /** Points `objects` at the key's newest version (`manifest`), or removes the row (null: none, or a delete marker). */
  private setCurrent(key: string, manifest: ObjectManifest | null): void {
    if (!manifest) {
      this.sql.exec('DELETE FROM objects WHERE key = ?', key);
      return;
    }
    const r = objectRow(key, manifest);
    this.sql.exec(
      'INSERT OR REPLACE INTO objects (key, version_id, etag, size, last_modified, checksum) VALUES (?, ?, ?, ?, ?, ?)',
      r.key,
      r.version_id,
      r.etag,
      r.size,
      r.last_modified,
      r.checksum,
    );
  }

  /** The next position in the key's version order (commit order). */
  private nextSeq(key: string): number {
    return this.sql.exec<{ seq: number }>('SELECT COALESCE(MAX(seq), 0) + 1 AS seq FROM versions WHERE key = ?', key).one().seq;
  }

  private storeVersion(key: string, manifest: ObjectManifest, nullVersion: boolean): void {
    this.sql.exec(
      'INSERT OR REPLACE INTO versions (key, version_id, delete_marker, manifest, seq, null_version) VALUES (?, ?, 0, ?, ?, ?)',
      key,
      manifest.versionId,
      JSON.stringify(manifest),
      this.nextSeq(key),
      nullVersion ? 1 : 0,
    );
    const now = Date.now();
    unitsOf(manifest).forEach((u, i) => {
      this.sql.exec(
        'INSERT OR REPLACE INTO units (unit_id, key, version_id, ordinal, shards, created_at, checked_at) VALUES (?, ?, ?, ?, ?, ?, 0)',
        u.unitId,
        key,
        manifest.versionId,
        i,
        u.k + u.m,
        now,
      );
    });
  }

  private storeMarker(key: string, nullVersion: boolean): { versionId: string; lastModified: string } {
    const marker = { versionId: newId(), lastModified: new Date().toISOString() };
    this.sql.exec(
      'INSERT INTO versions (key, version_id, delete_marker, manifest, seq, null_version) VALUES (?, ?, 1, ?, ?, ?)',
      key,
      marker.versionId,
      JSON.stringify({ lastModified: marker.lastModified }),
      this.nextSeq(key),
      nullVersion ? 1 : 0,
    );
    return marker;
  }

  private dropVersion(key: string, versionId: string): void {
    this.sql.exec('DELETE FROM units WHERE key = ? AND version_id = ?', key, versionId);
    this.sql.exec('DELETE FROM versions WHERE key = ? AND version_id = ?', key, versionId);
  }

  /** A version by the id S3 shows ('null': the null version), or the newest (null). */
  private versionRow(key: string, versionId: string | null): VersionRow | undefined {
    const cols = 'key, version_id, delete_marker, manifest, seq, null_version';
    if (versionId === null) return this.sql.exec<VersionRow>(`SELECT ${cols} FROM versions WHERE key = ? ORDER BY seq DESC LIMIT 1`, key).toArray()[0];
    if (versionId === NULL_VERSION) return this.sql.exec<VersionRow>(`SELECT ${cols} FROM versions WHERE key = ? AND null_version = 1`, key).toArray()[0];
    return this.sql.exec<VersionRow>(`SELECT ${cols} FROM versions WHERE key = ? AND version_id = ? AND null_version = 0`, key, versionId).toArray()[0];
  }

  /** What a read of the current version (null) or of version `versionId` finds. */
  lookup(key: string, versionId: string | null): VersionLookup {
    const row = this.versionRow(key, versionId);
    if (!row) return { kind: 'none' };
    const shown = shownVersionId(row);
    if (row.delete_marker) return { kind: 'marker', versionId: shown, lastModified: (JSON.parse(row.manifest) as { lastModified: string }).lastModified };
    const manifest = JSON.parse(row.manifest) as ObjectManifest;
    const found: VersionLookup =
      versionId !== null || this.versioning() !== null ? { kind: 'object', manifest, versionId: shown } : { kind: 'object', manifest };
    // A read of the current version learns when a rule will expire it (x-amz-expiration), in the same transaction.
    const expiration = versionId === null ? this.expiration(key, manifest) : null;
    return expiration ? { ...found, expiration } : found;
  }

  /** Rewrites a stored version's manifest in place (tags, shard states): same version, same units. */
  private rewrite(key: string, manifest: ObjectManifest): void {
    this.sql.exec('UPDATE versions SET manifest = ? WHERE key = ? AND version_id = ?', JSON.stringify(manifest), key, manifest.versionId);
  }

  /**
   * The manifest of the current version, or of `versionId`, to change in place (its tags, its ACL):
   * NoSuchKey / NoSuchVersion when there is none; a delete marker named has neither tags nor ACL:
   * 405, as S3 (the S3 layer names the method).
   */
  private editable(key: string, versionId: string | undefined): ObjectManifest {
    const found = versionId === undefined ? null : this.lookup(key, versionId);
    if (found?.kind === 'marker') throw new S3Error('MethodNotAllowed', undefined, { ResourceType: 'DeleteMarker' });
    const manifest = versionId === undefined ? this.get(key) : found?.kind === 'object' ? found.manifest : null;
    if (!manifest)
      throw versionId === undefined
        ? new S3Error('NoSuchKey', undefined, { Key: key })
        : new S3Error('NoSuchVersion', undefined, { Key: key, VersionId: versionId });
    return manifest;
  }

  /** Replaces the tags of a version in place (editable: its errors). */
  setTags(key: string, tags: Tag[], versionId?: string): CodedUnit | null {
    const manifest = this.editable(key, versionId);
    const unit = withTagsRecorded(manifest, tags);
    this.rewrite(key, manifest);
    return unit;
  }

  /**
   * Replaces the ACL of a version (metadata.acl, model/acl.ts; undefined: the bucket owner's
   * alone) in place (editable: its errors).
   */
  setAcl(key: string, acl: StoredObjectAcl | undefined, versionId?: string): void {
    const manifest = this.editable(key, versionId);
    manifest.metadata = withAcl(manifest.metadata, acl);
    this.rewrite(key, manifest);
  }

  /** The unit index's entry for `unitId`, with the unit as its version's manifest records it; null if not stored. */
  unit(unitId: string): UnitRecord | null {
    const row = this.unitRow(unitId);
    return row ? (this.unitRecords([row])[0] ?? null) : null;
  }

  private unitRow(unitId: string): UnitRow | undefined {
    return this.sql.exec<UnitRow>('SELECT unit_id, key, version_id, ordinal FROM units WHERE unit_id = ?', unitId).toArray()[0];
  }

  /** Units in id order after `afterUnit` (null: from the first), at most `limit`. */
  units(afterUnit: string | null, limit: number): UnitRecord[] {
    const rows =
      afterUnit === null
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

  /**
   * A move's commit (UpkeepCatalog.commitMove): the shard's placement changes only if it is still
   * on `from`; the copy left there is queued for deletion at `notBefore`. The caller's transaction
   * makes the check, the change and the queueing one step.
   */
  moveShard(move: ShardMove, notBefore: number): 'moved' | 'gone' {
    let tagRecord = false;
    const moved = this.changeUnit(move.unitId, (m) => {
      tagRecord = unitsOf(m).find((u) => u.unitId === move.unitId)?.tagRecord === true;
      return withMovedShard(m, move.unitId, move.shard, move.from, move.to);
    });
    if (!moved) return 'gone';
    const left: MovedShard = { unitId: move.unitId, shard: move.shard, backend: move.from, ...(tagRecord ? { tagRecord: true as const } : {}) };
    queueGarbage(this.sql, { bucket: this.bucket, units: [], shards: [left] }, notBefore);
    return 'moved';
  }

  /** Applies `change` to the manifest of the version holding `unitId`; false if it is gone or nothing changed. */
  private changeUnit(unitId: string, change: (m: ObjectManifest) => boolean): boolean {
    const row = this.unitRow(unitId);
    if (!row) return false;
    const before = this.version(row.key, row.version_id);
    if (!before) return false;
    const after = structuredClone(before);
    if (!change(after)) return false;
    this.ledger.replace(row.key, before, after);
    this.rewrite(row.key, after);
    return true;
  }

  /** DeleteObject (ObjectCatalog.removeManifest says what each versioning state does). */
  delete(key: string, conditions: DeleteConditions | undefined, graceMs: number, versionId?: string, bypassGovernance = false): DeleteObjectResult {
    if (versionId !== undefined) return this.deleteVersion(key, versionId, graceMs, bypassGovernance, conditions);
    const previous = this.get(key);
    checkDeleteConditions(previous ? deleteTarget(previous) : undefined, conditions, key, false);
    const status = this.versioning();
    if (status === 'Enabled') {
      this.setCurrent(key, null);
      return { versionId: this.storeMarker(key, false).versionId, deleteMarker: true };
    }
    // Never versioned or Suspended: the null version goes (an object's units to the collector).
    const replaced = this.versionRow(key, NULL_VERSION);
    if (replaced) this.removeVersion(key, replaced, graceMs);
    if (status === null) {
      this.setCurrent(key, null);
      return {};
    }
    this.storeMarker(key, true);
    this.setCurrent(key, null);
    return { versionId: NULL_VERSION, deleteMarker: true };
  }

  /** Removes exactly one version; the next newest becomes current if it was the newest. Absent: nothing to do. */
  private deleteVersion(key: string, versionId: string, graceMs: number, bypassGovernance = false, conditions?: DeleteConditions): DeleteObjectResult {
    const row = this.versionRow(key, versionId);
    if (!row) return { versionId };
    checkDeleteConditions(row.delete_marker ? { kind: 'marker' } : deleteTarget(JSON.parse(row.manifest) as ObjectManifest), conditions, key, true);
    const newest = this.versionRow(key, null)!;
    this.removeVersion(key, row, graceMs, bypassGovernance);
    if (newest.version_id === row.version_id) {
      const next = this.versionRow(key, null);
      this.setCurrent(key, next && !next.delete_marker ? (JSON.parse(next.manifest) as ObjectManifest) : null);
    }
    return row.delete_marker ? { versionId, deleteMarker: true } : { versionId };
  }

  /**
   * Drops a stored version; an object version's units are queued for deletion. Every way a
   * version leaves the catalog passes here, so here a locked version refuses (AccessDenied):
   * only `bypassGovernance` (an allowed S3 request) lets a GOVERNANCE-retained one go.
   */
  private removeVersion(key: string, row: VersionRow, graceMs: number, bypassGovernance = false): void {
    if (!row.delete_marker) {
      const manifest = JSON.parse(row.manifest) as ObjectManifest;
      assertRemovable(manifest.metadata.objectLock, bypassGovernance, Date.now());
      this.queueGarbage(supersededUnits(manifest, null), Date.now() + graceMs);
      this.ledger.replace(key, manifest, null);
    }
    this.dropVersion(key, row.version_id);
  }

  listVersions(options: ListVersionsOptions): ListVersionsResult {
    const { keyMarker, versionIdMarker } = options;
    const after = keyMarker !== null && versionIdMarker !== null ? this.versionRow(keyMarker, versionIdMarker) : undefined;
    return listVersionRows(this.sql, options, after ? String(after.seq) : null);
  }

  list(options: ListObjectsOptions): ListObjectsResult {
    const { prefix, delimiter, startAfter, maxKeys } = options;
    const fetch = (lower: Bound, upper: string | null, limit: number) =>
      this.sql
        .exec<ObjectRow>(
          // The class is in the version's manifest (absent: STANDARD); the current-version row has no column for it.
          `SELECT key, version_id, etag, size, last_modified, checksum, (SELECT json_extract(v.manifest, '$.metadata.storageClass') FROM versions v WHERE v.key = o.key AND v.version_id = o.version_id) AS storage_class FROM objects o WHERE ${rangeWhere('key', lower, upper)} ORDER BY key LIMIT ?`,
          ...(upper === null ? [lower.key] : [lower.key, upper]),
          limit,
        )
        .toArray();
    const page = listRanges(fetch, afterKey, { prefix, delimiter, start: startBound(prefix, delimiter, startAfter), maxEntries: maxKeys });
    return objectsResult({ ...page, entries: page.entries.map((e) => (e.kind === 'key' ? { ...e, value: objectSummary(e.value) } : e)) });
  }

  /** Any stored version (delete markers included: S3 refuses to delete such a bucket) or upload. */
  hasObjectsOrUploads(): boolean {
    return this.sql.exec('SELECT 1 FROM versions LIMIT 1').toArray().length + this.sql.exec('SELECT 1 FROM uploads LIMIT 1').toArray().length > 0;
  }

  queueGarbage(units: CodedUnit[], notBefore: number): void {
    if (units.length > 0) queueGarbage(this.sql, { bucket: this.bucket, units }, notBefore);
  }

  /** A small named value of the bucket's own bookkeeping (the scrubber's cursor, CORS, tags). */
  getState(name: string): string | null {
    return readState(this.sql, name);
  }

  setState(name: string, value: string | null): void {
    writeState(this.sql, name, value);
  }

  /** Stored versions of `key`, delete markers included. */
  private versionCount(key: string): number {
    return this.sql.exec<{ n: number }>('SELECT COUNT(*) AS n FROM versions WHERE key = ?', key).one().n;
  }

  /**
   * A write's first step: `conditions` checked against the current object (and the version cap,
   * in an Enabled bucket, where every write adds a version: refused before any shard is sent;
   * the commit checks again), then its unit ids reserved.
   */
  prepare(key: string, conditions: CatalogWriteConditions, unitIds: string[], expires: number): void {
    const current = this.get(key);
    checkWriteConditions(current ? { etag: current.etag, lastModified: new Date(current.lastModified) } : undefined, conditions, key);
    if (conditions.maxVersions !== undefined && this.versioning() === 'Enabled' && this.versionCount(key) >= conditions.maxVersions)
      throw tooManyVersions(key, conditions.maxVersions);
    this.reserve(unitIds, expires, key);
  }

  /** `key`: the write's (an on-line split moves the reservation with it; sql-split.ts). */
  reserve(unitIds: string[], expires: number, key: string | null): void {
    for (const id of unitIds) this.sql.exec('INSERT OR REPLACE INTO reservations (unit_id, expires, key) VALUES (?, ?, ?)', id, expires, key);
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
  const rows = sql
    .exec<{ id: number; entry: string }>('SELECT id, entry FROM garbage WHERE not_before <= ? ORDER BY not_before, id LIMIT ?', now, limit)
    .toArray();
  for (const r of rows) sql.exec('DELETE FROM garbage WHERE id = ?', r.id);
  const taken: GarbageUnits[] = rows
    .map((r) => withoutLocked(sql, JSON.parse(r.entry) as GarbageUnits, now))
    .filter((e) => e.units.length + (e.unitIds?.length ?? 0) + (e.shards?.length ?? 0) > 0);
  if (bucket === undefined || taken.length >= limit) return taken;
  const expired = sql.exec<{ unit_id: string }>('SELECT unit_id FROM reservations WHERE expires <= ? ORDER BY expires LIMIT ?', now, limit).toArray();
  for (const r of expired) sql.exec('DELETE FROM reservations WHERE unit_id = ?', r.unit_id);
  const ids = expired.map((r) => r.unit_id).filter((id) => !lockedUnit(sql, id, now));
  if (ids.length) taken.push({ bucket, units: [], unitIds: ids });
  return taken;
}

/**
 * Whether `unitId` belongs to a stored version that is locked at `now` (retention running or
 * legal hold ON). The collector is never handed such a unit, whatever put it in the garbage:
 * the last guard between a locked version and the deletion of its shards.
 */
export function lockedUnit(sql: SqlStorage, unitId: string, now: number): boolean {
  const row = sql
    .exec<{ manifest: string }>('SELECT v.manifest FROM units u JOIN versions v ON v.key = u.key AND v.version_id = u.version_id WHERE u.unit_id = ?', unitId)
    .toArray()[0];
  return row !== undefined && lockRefusal((JSON.parse(row.manifest) as ObjectManifest).metadata.objectLock, false, now) !== null;
}

/**
 * `entry` without the units of locked versions (they stay where they are: referenced). A moved
 * shard's old copy (`shards`) still goes: its unit lives on where the move put it.
 */
function withoutLocked(sql: SqlStorage, entry: GarbageUnits, now: number): GarbageUnits {
  const units = entry.units.filter((u) => !lockedUnit(sql, u.unitId, now));
  const unitIds = entry.unitIds?.filter((id) => !lockedUnit(sql, id, now));
  return { ...entry, units, ...(unitIds ? { unitIds } : {}) };
}

/** Pending garbage and reservations (as garbage due at their expiry), for a retiring bucket's hand-over. */
export function allGarbage(sql: SqlStorage, bucket: string): GarbageRow[] {
  const rows = sql.exec<GarbageRow>('SELECT not_before, entry FROM garbage ORDER BY id').toArray();
  const reserved = sql.exec<{ unit_id: string; expires: number }>('SELECT unit_id, expires FROM reservations ORDER BY expires').toArray();
  const entry = (ids: string[]): string => JSON.stringify({ bucket, units: [], unitIds: ids } satisfies GarbageUnits);
  return [...rows, ...reserved.map((r) => ({ not_before: r.expires, entry: entry([r.unit_id]) }))];
}
