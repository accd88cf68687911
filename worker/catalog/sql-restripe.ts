/**
 * The re-stripe's view of one bucket's catalog (upkeep/restripe.ts): every stored object version
 * (delete markers have no bytes), paged in (key, version id) order, and the swap of one version's
 * storage for its rewrite, compare-and-set on the manifest JSON as the re-stripe read it.
 * Anything that changed the version meanwhile wins: its deletion (a DELETE, the lifecycle job,
 * an overwrite of the null version), a tag or lock change, a shard marked missing, repaired or
 * moved. The rewrite's units then become garbage, due at once (no reader ever knew them), and the
 * re-stripe tries the version again in its next pass. Synchronous: the caller's transaction
 * makes the check and the swap one step.
 */
import type { ObjectManifest } from '../format/manifest.ts';
import { withClass } from '../model/storage-class.ts';
import { supersededUnits, unitsOf } from './rules.ts';
import type { SqlObjects } from './sql-objects.ts';
import type { RestripeChange, VersionAt, VersionRecord } from './types.ts';

/** Up to `limit` stored object versions after `after` (null: from the first). */
export function listVersionRecords(sql: SqlStorage, after: VersionAt | null, limit: number): VersionRecord[] {
  const rows = sql
    .exec<{ key: string; version_id: string; manifest: string }>(
      after
        ? 'SELECT key, version_id, manifest FROM versions WHERE delete_marker = 0 AND (key > ? OR (key = ? AND version_id > ?)) ORDER BY key, version_id LIMIT ?'
        : 'SELECT key, version_id, manifest FROM versions WHERE delete_marker = 0 ORDER BY key, version_id LIMIT ?',
      ...(after ? [after.key, after.key, after.versionId, limit] : [limit]),
    )
    .toArray();
  return rows.map((r) => ({ at: { key: r.key, versionId: r.version_id }, json: r.manifest }));
}

/**
 * Installs `storage` as the storage of the version at `at` if its manifest is still `before`
 * (every other field kept); its old units are queued for deletion at `notBefore` (reads that
 * looked it up before the swap finish first). Otherwise nothing changes but the rewrite's units,
 * queued for deletion now. Either way the rewrite's reservations end: its units are referenced,
 * or garbage.
 */
export function commitRestripe(
  sql: SqlStorage,
  objects: SqlObjects,
  at: VersionAt,
  before: string,
  storage: ObjectManifest['storage'],
  notBefore: number,
  change?: RestripeChange,
): 'rewritten' | 'gone' {
  const row = sql
    .exec<{ manifest: string }>('SELECT manifest FROM versions WHERE key = ? AND version_id = ? AND delete_marker = 0', at.key, at.versionId)
    .toArray()[0];
  const fresh = storage.kind === 'coded' ? storage.units : [];
  objects.release(fresh);
  if (!row || row.manifest !== before) {
    // Never a unit the version referenced when read or references now: a rewrite shares none, and must not delete one if it ever did.
    const referenced = new Set(
      [...unitsOf(JSON.parse(before) as ObjectManifest), ...unitsOf(row ? (JSON.parse(row.manifest) as ObjectManifest) : null)].map((u) => u.unitId),
    );
    objects.queueGarbage(
      fresh.filter((u) => !referenced.has(u.unitId)),
      Date.now(),
    );
    return 'gone';
  }
  const old = JSON.parse(before) as ObjectManifest;
  const next: ObjectManifest = { ...old, storage, ...(change ? { metadata: withClass(old.metadata, change.storageClass) } : {}) };
  objects.ledger.replace(at.key, old, next);
  sql.exec('UPDATE versions SET manifest = ? WHERE key = ? AND version_id = ?', JSON.stringify(next), at.key, at.versionId);
  sql.exec('DELETE FROM units WHERE key = ? AND version_id = ?', at.key, at.versionId);
  const now = Date.now();
  unitsOf(next).forEach((u, i) => {
    sql.exec(
      'INSERT OR REPLACE INTO units (unit_id, key, version_id, ordinal, shards, created_at, checked_at) VALUES (?, ?, ?, ?, ?, ?, 0)',
      u.unitId,
      at.key,
      at.versionId,
      i,
      u.k + u.m,
      now,
    );
  });
  objects.queueGarbage(supersededUnits(old, next), notBefore);
  return 'rewritten';
}
