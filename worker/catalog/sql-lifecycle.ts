/**
 * What the lifecycle job (upkeep/lifecycle.ts) reads of a bucket's catalog: its rules, when they
 * were set and its progress (state rows, no schema of their own: 'lifecycle' holds the rules as
 * JSON, 'lifecycle-set-at' the time they were stored, 'lifecycle-progress' the job's cursor and
 * counts), and pages of keys with every version of
 * each key (newest first, with the size and tags a filter needs), never a key cut in two, so the
 * evaluator always sees a key whole.
 */
import type { ObjectManifest } from '../format/manifest.ts';
import type { LifecycleRule, VersionFacts } from '../model/lifecycle.ts';
import type { LifecycleProgress } from './types.ts';
import { shownVersionId, type VersionRow } from './sql-versions.ts';

/** State row of the bucket's lifecycle rules (JSON LifecycleRule[]; none: no configuration). */
export const LIFECYCLE = 'lifecycle';
/**
 * State row of when the rules were stored (ms since the epoch, as JSON): the job leaves a
 * configuration alone while it settles (model/lifecycle.ts configurationSettleMs). Absent (rules
 * stored before it existed): long settled.
 */
export const LIFECYCLE_SET_AT = 'lifecycle-set-at';
/** State row of the lifecycle job's progress through the bucket (JSON LifecycleProgress). */
export const LIFECYCLE_PROGRESS = 'lifecycle-progress';

export interface KeyVersions {
  key: string;
  versions: VersionFacts[];
}

function facts(row: VersionRow): VersionFacts {
  const versionId = shownVersionId(row);
  if (row.delete_marker) {
    const { lastModified } = JSON.parse(row.manifest) as { lastModified: string };
    return { versionId, deleteMarker: true, lastModified: Date.parse(lastModified), size: 0, tags: [] };
  }
  const m = JSON.parse(row.manifest) as ObjectManifest;
  return {
    versionId,
    deleteMarker: false,
    lastModified: Date.parse(m.lastModified),
    size: m.size,
    tags: m.metadata.tags ?? [],
    etag: m.etag,
    ...(m.metadata.storageClass ? { storageClass: m.metadata.storageClass } : {}),
  };
}

/**
 * Keys after `afterKey` (null: from the first) with all their versions, about `maxVersions`
 * versions in all: the last key of a full page is left for the next page unless it is the only
 * one (then it comes whole, however many versions it has). `atEnd`: no key after these.
 */
export function keyVersionsPage(sql: SqlStorage, afterKey: string | null, maxVersions: number): { keys: KeyVersions[]; atEnd: boolean } {
  const cols = 'key, version_id, delete_marker, manifest, seq, null_version';
  const rows = sql.exec<VersionRow>(`SELECT ${cols} FROM versions WHERE key > ? ORDER BY key, seq DESC LIMIT ?`, afterKey ?? '', maxVersions + 1).toArray();
  const atEnd = rows.length <= maxVersions;
  let page = rows.slice(0, maxVersions);
  if (!atEnd) {
    const last = rows[maxVersions]!.key;
    const complete = page.filter((r) => r.key !== last);
    // One key holds the whole page: read it whole (bounded by the per-key version cap, where set).
    page = complete.length ? complete : sql.exec<VersionRow>(`SELECT ${cols} FROM versions WHERE key = ? ORDER BY seq DESC`, last).toArray();
  }
  const keys: KeyVersions[] = [];
  for (const r of page) {
    if (keys.at(-1)?.key !== r.key) keys.push({ key: r.key, versions: [] });
    keys.at(-1)!.versions.push(facts(r));
  }
  return { keys, atEnd: atEnd || (keys.length > 0 && !rowsAfter(sql, keys.at(-1)!.key)) };
}

const rowsAfter = (sql: SqlStorage, key: string) => sql.exec('SELECT 1 FROM versions WHERE key > ? LIMIT 1', key).toArray().length > 0;

export const readRules = (value: string | null): LifecycleRule[] | null => (value === null ? null : (JSON.parse(value) as LifecycleRule[]));
export const readProgress = (value: string | null): LifecycleProgress | null => (value === null ? null : (JSON.parse(value) as LifecycleProgress));
