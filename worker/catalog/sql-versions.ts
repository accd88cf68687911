/**
 * The rows of S3 versioning in a bucket's `versions` table (sql-schema.ts) and ListObjectVersions
 * over them: keys in listing order, a key's versions newest first (`seq` descending), the S3
 * listing rules of range-list.ts (prefix, delimiter, one max-keys budget for versions, delete
 * markers and common prefixes). A page resumes after (key, seq): the Bound's `afterId` is the
 * seq of the last version returned, so a page boundary inside a key's versions loses none.
 * Spec: S3 ListObjectVersions. Known gap: a version-id-marker naming a version no longer stored
 * resumes after the whole key-marker (S3 would answer from its place in the order).
 */
import type { ObjectManifest } from '../format/manifest.ts';
import type { ListPage } from '../model/listing.ts';
import type { ListVersionsOptions, ListVersionsResult, ObjectVersionSummary } from '../model/object-store.ts';
import { listRanges, startBound, type Bound } from './range-list.ts';

/** The id S3 gives the null version. */
export const NULL_VERSION = 'null';

/** `manifest`: an ObjectManifest, or `{"lastModified"}` for a delete marker. */
export type VersionRow = { key: string; version_id: string; delete_marker: number; manifest: string; seq: number; null_version: number };

/** The id S3 shows for a stored version: 'null' for the null version, else its own id. */
export const shownVersionId = (row: VersionRow): string => (row.null_version ? NULL_VERSION : row.version_id);

type ListedRow = VersionRow & { latest: number };

function summary(row: ListedRow): ObjectVersionSummary {
  const base = { key: row.key, versionId: shownVersionId(row), isLatest: row.seq === row.latest };
  if (row.delete_marker) {
    const { lastModified } = JSON.parse(row.manifest) as { lastModified: string };
    return { ...base, deleteMarker: true, lastModified: new Date(lastModified) };
  }
  const m = JSON.parse(row.manifest) as ObjectManifest;
  return {
    ...base,
    deleteMarker: false,
    lastModified: new Date(m.lastModified),
    object: { size: m.size, etag: m.etag, checksum: m.checksum, ...(m.metadata.storageClass ? { storageClass: m.metadata.storageClass } : {}) },
  };
}

/**
 * One page of ListObjectVersions. `afterSeq`: the seq of the version named by the
 * version-id-marker (null: resume after every version of the key-marker).
 */
export function listVersionRows(sql: SqlStorage, options: ListVersionsOptions, afterSeq: string | null): ListVersionsResult {
  const { prefix, delimiter, keyMarker, maxKeys } = options;
  const cols = 'key, version_id, delete_marker, manifest, seq, null_version, (SELECT MAX(seq) FROM versions l WHERE l.key = v.key) AS latest';
  const fetch = (lower: Bound, upper: string | null, limit: number): ListedRow[] => {
    const below = upper === null ? '' : ' AND key < ?';
    const tail = upper === null ? [] : [upper];
    if (lower.afterId !== undefined) {
      return sql
        .exec<ListedRow>(
          `SELECT ${cols} FROM versions v WHERE ((key = ? AND seq < ?) OR key > ?)${below} ORDER BY key, seq DESC LIMIT ?`,
          lower.key,
          Number(lower.afterId),
          lower.key,
          ...tail,
          limit,
        )
        .toArray();
    }
    return sql
      .exec<ListedRow>(
        `SELECT ${cols} FROM versions v WHERE key ${lower.inclusive ? '>=' : '>'} ?${below} ORDER BY key, seq DESC LIMIT ?`,
        lower.key,
        ...tail,
        limit,
      )
      .toArray();
  };
  const after = (row: ListedRow): Bound => ({ key: row.key, inclusive: false, afterId: String(row.seq) });
  const page = listRanges(fetch, after, { prefix, delimiter, start: startBound(prefix, delimiter, keyMarker, afterSeq), maxEntries: maxKeys });
  return versionsResult({ ...page, entries: page.entries.map((e) => (e.kind === 'key' ? { ...e, value: summary(e.value) } : e)) });
}

/** Shapes a page as ListObjectVersions wants it: the next markers name the last entry of a truncated page. */
function versionsResult(page: ListPage<ObjectVersionSummary>): ListVersionsResult {
  const result: ListVersionsResult = { versions: [], commonPrefixes: [], isTruncated: page.isTruncated, nextKeyMarker: null, nextVersionIdMarker: null };
  for (const e of page.entries) {
    if (e.kind === 'prefix') {
      result.commonPrefixes.push(e.prefix);
      [result.nextKeyMarker, result.nextVersionIdMarker] = [e.prefix, null];
    } else {
      result.versions.push(e.value);
      [result.nextKeyMarker, result.nextVersionIdMarker] = [e.value.key, e.value.versionId];
    }
  }
  if (!page.isTruncated) [result.nextKeyMarker, result.nextVersionIdMarker] = [null, null];
  return result;
}
