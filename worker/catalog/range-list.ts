/**
 * Range listing: the S3 listing rules of worker/model/listing.ts (prefix, any-string
 * delimiter, one budget shared by keys and common prefixes, a resume point that is a common
 * prefix skips everything under it) over a source that only answers "the next n rows from this
 * bound, in order": a SQLite index range or a sorted array. A common prefix costs one jump to the
 * first key past it, so a page reads about one row per entry, never the whole table.
 * Order: UTF-8 byte order = code point order = SQLite's BINARY collation on TEXT.
 * Known gap: keys holding unpaired surrogates are not UTF-8; their order is undefined.
 */
import { commonPrefixOf, compareKeys, type ListPage } from '../model/listing.ts';
import type { ListObjectsResult, ListUploadsResult, ObjectSummary, UploadInfo } from '../model/object-store.ts';

/** Where a scan starts: at `key`, after `key`, or (for uploads) after entry `afterId` of `key`. */
export interface Bound {
  key: string;
  inclusive: boolean;
  afterId?: string;
}

/** Up to `limit` rows from `lower` on, below `upper` (null: no end), in listing order. */
export type RangeFetch<T> = (lower: Bound, upper: string | null, limit: number) => T[];

/** The least string above every string that starts with `prefix`, or null when none exists. */
export function keySuccessor(prefix: string): string | null {
  const points = [...prefix];
  while (points.length > 0) {
    const last = points.pop()!.codePointAt(0)!;
    if (last < 0x10ffff) return points.join('') + String.fromCodePoint(last + 1 === 0xd800 ? 0xe000 : last + 1);
  }
  return null;
}

/**
 * The first bound of a listing resuming after `marker` (S3 StartAfter / KeyMarker). Null: empty.
 * A marker inside a common prefix (the prefix itself, or a key under it) resumes past the whole
 * prefix: it sorts at or before the marker, so it is never returned again.
 */
export function startBound(prefix: string, delimiter: string | null, marker: string | null, afterId?: string | null): Bound | null {
  if (marker === null || compareKeys(marker, prefix) < 0) return { key: prefix, inclusive: true };
  const rolledUp = commonPrefixOf(marker, prefix, delimiter);
  if (rolledUp !== null) return pastPrefix(rolledUp);
  return afterId ? { key: marker, inclusive: false, afterId } : { key: marker, inclusive: false };
}

function pastPrefix(prefix: string): Bound | null {
  const next = keySuccessor(prefix);
  return next === null ? null : { key: next, inclusive: true };
}

/** One page of at most `maxEntries` keys and common prefixes; `after(row)` is the bound past a row. */
export function listRanges<T extends { key: string }>(
  fetch: RangeFetch<T>,
  after: (row: T) => Bound,
  options: { prefix: string; delimiter: string | null; start: Bound | null; maxEntries: number },
): ListPage<T> {
  const { prefix, delimiter, maxEntries } = options;
  const entries: ListPage<T>['entries'] = [];
  let lastEntry: string | null = null;
  if (maxEntries <= 0) return { entries, isTruncated: false, lastEntry };
  // Without a successor (prefix all U+10FFFF) every key above the prefix starts with it.
  const upper = prefix === '' ? null : keySuccessor(prefix);
  let lower = options.start;
  while (lower !== null) {
    const need = maxEntries - entries.length + 1; // one more than fits tells isTruncated
    let jumped = false;
    for (const row of fetch(lower, upper, need)) {
      if (entries.length === maxEntries) return { entries, isTruncated: true, lastEntry };
      const cp = commonPrefixOf(row.key, prefix, delimiter);
      if (cp !== null) {
        entries.push({ kind: 'prefix', prefix: cp });
        lastEntry = cp;
        lower = pastPrefix(cp);
        jumped = true;
        break;
      }
      entries.push({ kind: 'key', key: row.key, value: row });
      lastEntry = row.key;
      lower = after(row);
    }
    if (!jumped) break; // the fetch came back short: the range is exhausted
  }
  return { entries, isTruncated: false, lastEntry };
}

/** A RangeFetch over rows already sorted by key (UTF-8 order), then uploadId. */
export function sortedRowsFetch<T extends { key: string; uploadId?: string }>(rows: T[]): RangeFetch<T> {
  const above = (row: T, b: Bound) => {
    const c = compareKeys(row.key, b.key);
    if (c !== 0) return c > 0;
    return b.afterId !== undefined ? (row.uploadId ?? '') > b.afterId : b.inclusive;
  };
  return (lower, upper, limit) => {
    const out: T[] = [];
    for (const row of rows) {
      if (out.length === limit || (upper !== null && compareKeys(row.key, upper) >= 0)) break;
      if (above(row, lower)) out.push(row);
    }
    return out;
  };
}

/** Shapes a page of objects as ListObjects wants it. */
export function objectsResult(page: ListPage<ObjectSummary>): ListObjectsResult {
  const result: ListObjectsResult = { objects: [], commonPrefixes: [], isTruncated: page.isTruncated, lastEntry: page.lastEntry };
  for (const e of page.entries) {
    if (e.kind === 'prefix') result.commonPrefixes.push(e.prefix);
    else result.objects.push(e.value);
  }
  return result;
}

/** Shapes a page of uploads as ListMultipartUploads wants it: next markers name the last entry. */
export function uploadsResult(page: ListPage<UploadInfo>): ListUploadsResult {
  const result: ListUploadsResult = { uploads: [], commonPrefixes: [], isTruncated: page.isTruncated, nextKeyMarker: null, nextUploadIdMarker: null };
  for (const e of page.entries) {
    if (e.kind === 'prefix') {
      result.commonPrefixes.push(e.prefix);
      [result.nextKeyMarker, result.nextUploadIdMarker] = [e.prefix, null];
    } else {
      result.uploads.push(e.value);
      [result.nextKeyMarker, result.nextUploadIdMarker] = [e.value.key, e.value.uploadId];
    }
  }
  return result;
}

/** The bound past an upload row: the next upload of the same key, or the next key. */
export const afterUpload = (u: UploadInfo): Bound => ({ key: u.key, inclusive: false, afterId: u.uploadId });
/** The bound past an object row. */
export const afterKey = (o: { key: string }): Bound => ({ key: o.key, inclusive: false });
