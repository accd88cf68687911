/**
 * Listings across a split bucket's partitions (the `walk` scope, docs/PARTITIONS.md). A page is
 * filled from the partition holding its start, then the next, each asked for what is left of the
 * budget and resuming after the last entry the page holds, so the page equals the one a bucket of
 * one partition gives: the same keys, common prefixes, markers and truncation. A partition holds
 * only the keys of its range, so a common prefix spanning a boundary is folded by resuming past
 * it. A page that fills exactly at a partition's end asks the next partitions for one entry more,
 * so IsTruncated is never false while keys remain. Tokens and markers name keys, never partitions.
 */
import { compareKeys } from '../model/listing.ts';
import type * as S from '../model/object-store.ts';
import { rangeIndexOf, isMoved, type Moved, type PartitionMap } from './partition-map.ts';
import type { Reply } from './rpc.ts';
import type { DegradedUnit, SealRecord, SealRecordCursor, VersionAt, VersionRecord } from './types.ts';
import type { KeyVersions } from './sql-lifecycle.ts';

/** How one listing is walked: its arguments after the bucket, and its answer. */
interface Walk<O, R> {
  /** The key the walk starts at (the first partition is the one holding it). */
  start(options: O): string;
  budget(options: O): number;
  /** The options for the next partition: `budget` entries, resuming after `after` (null: as given). */
  next(options: O, budget: number, after: R | null): O;
  entries(result: R): number;
  /** `a` then `b`, b from the next partition. */
  join(a: R, b: R): R;
  /** More entries in this partition's range than the page took. */
  truncated(result: R): boolean;
  /** `result` (a whole page) marked truncated: more entries exist beyond it. */
  markTruncated(result: R): R;
  /** A page that fills at a partition's end asks the next partitions whether more exist (S3's
   *  IsTruncated); without, it is marked truncated and the caller's next page finds out. */
  lookahead?: true;
}

/** The later of a page's last key and last common prefix (entries come in key order). */
function lastOf(keys: string[], prefixes: string[]): string | null {
  const [k, p] = [keys.at(-1) ?? null, prefixes.at(-1) ?? null];
  if (k === null || p === null) return k ?? p;
  return compareKeys(k, p) > 0 ? k : p;
}

const later = (a: string | null, b: string): string => (a !== null && compareKeys(a, b) > 0 ? a : b);

const objects: Walk<S.ListObjectsOptions, S.ListObjectsResult> = {
  start: (o) => later(o.startAfter, o.prefix),
  budget: (o) => o.maxKeys,
  next: (o, budget, after) => ({ ...o, maxKeys: budget, startAfter: after?.lastEntry ?? o.startAfter }),
  entries: (r) => r.objects.length + r.commonPrefixes.length,
  join: (a, b) => ({
    objects: [...a.objects, ...b.objects],
    commonPrefixes: [...a.commonPrefixes, ...b.commonPrefixes],
    isTruncated: b.isTruncated,
    lastEntry: b.lastEntry ?? a.lastEntry,
  }),
  truncated: (r) => r.isTruncated,
  markTruncated: (r) => ({ ...r, isTruncated: true }),
  lookahead: true,
};

/** The last entry of a versions page as markers (a page not truncated carries none). */
function versionsLast(r: S.ListVersionsResult): { key: string; versionId: string | null } | null {
  const last = lastOf(
    r.versions.map((v) => v.key),
    r.commonPrefixes,
  );
  if (last === null) return null;
  const v = r.versions.at(-1);
  return v && v.key === last ? { key: last, versionId: v.versionId } : { key: last, versionId: null };
}

const versions: Walk<S.ListVersionsOptions, S.ListVersionsResult> = {
  start: (o) => later(o.keyMarker, o.prefix),
  budget: (o) => o.maxKeys,
  // A key's versions are all in one partition: the next one starts after the last key whole.
  next: (o, budget, after) => {
    const last = after ? versionsLast(after) : null;
    return last ? { ...o, maxKeys: budget, keyMarker: last.key, versionIdMarker: null } : { ...o, maxKeys: budget };
  },
  entries: (r) => r.versions.length + r.commonPrefixes.length,
  join: (a, b) => ({
    versions: [...a.versions, ...b.versions],
    commonPrefixes: [...a.commonPrefixes, ...b.commonPrefixes],
    isTruncated: b.isTruncated,
    nextKeyMarker: b.nextKeyMarker,
    nextVersionIdMarker: b.nextVersionIdMarker,
  }),
  truncated: (r) => r.isTruncated,
  markTruncated: (r) => {
    const last = versionsLast(r);
    return { ...r, isTruncated: true, nextKeyMarker: last?.key ?? null, nextVersionIdMarker: last?.versionId ?? null };
  },
  lookahead: true,
};

const uploads: Walk<S.ListUploadsOptions, S.ListUploadsResult> = {
  start: (o) => later(o.keyMarker, o.prefix),
  budget: (o) => o.maxUploads,
  next: (o, budget, after) =>
    after && after.nextKeyMarker !== null
      ? { ...o, maxUploads: budget, keyMarker: after.nextKeyMarker, uploadIdMarker: after.nextUploadIdMarker }
      : { ...o, maxUploads: budget },
  entries: (r) => r.uploads.length + r.commonPrefixes.length,
  join: (a, b) => ({
    uploads: [...a.uploads, ...b.uploads],
    commonPrefixes: [...a.commonPrefixes, ...b.commonPrefixes],
    isTruncated: b.isTruncated,
    nextKeyMarker: b.nextKeyMarker ?? a.nextKeyMarker,
    nextUploadIdMarker: b.nextKeyMarker !== null ? b.nextUploadIdMarker : a.nextUploadIdMarker,
  }),
  truncated: (r) => r.isTruncated,
  markTruncated: (r) => ({ ...r, isTruncated: true }),
  lookahead: true,
};

/** Upkeep's walks: rows after a cursor naming a key, up to a limit; a short answer ends a partition. */
function rows<C extends { key: string } | null, T>(keyOfRow: (row: T) => C): Walk<{ after: C; limit: number }, T[]> {
  return {
    start: (o) => o.after?.key ?? '',
    budget: (o) => o.limit,
    next: (o, budget, after) => ({ after: after?.length ? keyOfRow(after.at(-1)!) : o.after, limit: budget }),
    entries: (r) => r.length,
    join: (a, b) => [...a, ...b],
    truncated: () => false, // a partition answering `limit` rows has filled the page; one answering fewer has none left
    markTruncated: (r) => r,
  };
}

const degraded = rows<{ key: string; unitId: string } | null, DegradedUnit>((u) => ({ key: u.key, unitId: u.unitId }));
const versionRecords = rows<VersionAt | null, VersionRecord>((r) => r.at);

/** listKeyVersions: whole keys' versions after a key; `atEnd` only after the last partition. */
const keyVersions: Walk<{ after: { key: string } | null; limit: number }, { keys: KeyVersions[]; atEnd: boolean }> = {
  start: (o) => o.after?.key ?? '',
  budget: (o) => o.limit,
  next: (o, budget, after) => ({ after: after?.keys.length ? { key: after.keys.at(-1)!.key } : o.after, limit: budget }),
  entries: (r) => r.keys.reduce((n, k) => n + Math.max(1, k.versions.length), 0),
  join: (a, b) => ({ keys: [...a.keys, ...b.keys], atEnd: b.atEnd }),
  truncated: (r) => !r.atEnd,
  markTruncated: (r) => ({ ...r, atEnd: false }),
  lookahead: true,
};

/**
 * Each walked operation: how its arguments (as the object takes them) become the walk's options
 * and back. The listings take (bucket, options); upkeep's walks (bucket, cursor, limit).
 */
interface WalkRow {
  walk: Walk<never, never>;
  options(args: unknown[]): unknown;
  args(bucket: string, options: unknown): unknown[];
}

const listing = (walk: Walk<never, never>): WalkRow => ({ walk, options: (a) => a[1], args: (bucket, o) => [bucket, o] });
const cursorWalk = (walk: Walk<never, never>, toCursor: (after: unknown) => unknown = (a) => a): WalkRow => ({
  walk,
  options: (a) => ({ after: a[1] === null ? null : typeof a[1] === 'string' ? { key: a[1] } : a[1], limit: a[2] }),
  args: (bucket, o) => {
    const { after, limit } = o as { after: unknown; limit: number };
    return [bucket, after === null ? null : toCursor(after), limit];
  },
});

export const WALKS = {
  listManifests: listing(objects as Walk<never, never>),
  listVersions: listing(versions as Walk<never, never>),
  listUploadRecords: listing(uploads as Walk<never, never>),
  listDegradedUnits: cursorWalk(degraded as Walk<never, never>),
  listVersionRecords: cursorWalk(versionRecords as Walk<never, never>),
  listKeyVersions: cursorWalk(keyVersions as Walk<never, never>, (a) => (a as { key: string }).key),
} satisfies Record<string, WalkRow>;

export type WalkName = keyof typeof WALKS;

/** One call: the instance, the operation's arguments, how it was routed; answers a Reply or Moved. */
export type WalkCall = (instance: string, args: unknown[], via: { key: string; epoch: number }) => Promise<unknown>;

/** The operation of `row` with `args` walked over `map`'s partitions: its Reply, or Moved. */
export async function walkPartitions(row: WalkRow | undefined, args: unknown[], map: PartitionMap, call: WalkCall): Promise<Reply<unknown> | Moved> {
  if (row === undefined) throw new Error('catalog: no walk for this operation');
  const walk = row.walk as unknown as Walk<unknown, unknown>;
  const bucket = args[0] as string;
  const given = row.options(args);
  const start = walk.start(given);
  let budget = walk.budget(given);
  let page: unknown = null;
  for (let i = rangeIndexOf(map, start); i < map.ranges.length; i++) {
    if (page !== null && budget <= 0 && !walk.lookahead) return { ok: walk.markTruncated(page) };
    const lookahead = page !== null && budget <= 0;
    const options = page === null ? given : walk.next(given, lookahead ? 1 : budget, page);
    const via = { key: page === null ? start : map.ranges[i]!.low, epoch: map.epoch };
    const answer = (await call(map.ranges[i]!.instance, row.args(bucket, options), via)) as Reply<unknown> | Moved;
    if (isMoved(answer) || answer.error) return answer;
    const part = answer.ok;
    if (lookahead) {
      if (walk.entries(part) > 0) return { ok: walk.markTruncated(page) };
      continue;
    }
    page = page === null ? part : walk.join(page, part);
    budget -= walk.entries(part);
    if (walk.truncated(part) || walk.budget(given) <= 0) return { ok: page };
  }
  return { ok: page };
}

/**
 * Key rotation's records (sql-seals.ts) partition by partition: a partition's versions by (key,
 * version id), then its parts by (upload id, part number). The cursor names the partition by its
 * low key (`low`), so a run resumes there; if the map changed meanwhile, the partition now holding
 * `low` is read again from its start: a record may be visited twice (its replacement is a
 * compare-and-set, so twice is harmless), never skipped.
 */
export async function walkSeals(args: unknown[], map: PartitionMap, call: WalkCall): Promise<Reply<SealRecord[]> | Moved> {
  const [bucket, after, limit] = args as [string, SealRecordCursor | null, number];
  const out: SealRecord[] = [];
  for (let i = rangeIndexOf(map, after?.low ?? ''); i < map.ranges.length && out.length < limit; i++) {
    const low = map.ranges[i]!.low;
    const from = after && (after.low ?? '') === low && out.length === 0 ? { kind: after.kind, a: after.a, b: after.b } : null;
    const answer = (await call(map.ranges[i]!.instance, [bucket, from, limit - out.length], { key: low, epoch: map.epoch })) as Reply<SealRecord[]> | Moved;
    if (isMoved(answer) || answer.error) return answer;
    out.push(...answer.ok.map((r) => ({ ...r, at: { ...r.at, low } })));
  }
  return { ok: out };
}

/** The partition holding a key rotation record: a version's by its key, a part's by its cursor's partition. */
export function sealOwner(map: PartitionMap, at: SealRecordCursor): number {
  return rangeIndexOf(map, at.kind === 'version' ? at.a : (at.low ?? ''));
}

/**
 * Upkeep operations already spread over a split bucket's partitions (the rest of the `partition`
 * scope waits for docs/PARTITIONS.md slice 5, and a split bucket refuses it meanwhile):
 * - `all`: sent to every partition (the scrubber's record and cursor: each partition marks the
 *   units it holds and keeps the same cursor, so the root's cursor is the bucket's; a repair wake-up);
 * - `merge`: units in id order, merged from every partition's first `limit` after the cursor;
 * - `byItem`: each item to the partition holding it (key rotation's compare-and-set replacements).
 * The progress records of drain, re-stripe, rotation and lifecycle stay in the root, one per
 * job and bucket: their cursors are keys or unit ids, read across partitions by the walks above.
 */
export const SPREAD = { recordScrub: 'all', repairSoon: 'all', listUnits: 'merge', getScrubCursor: 'root', replaceSealRecords: 'byItem' } as const;
export type SpreadName = keyof typeof SPREAD;
export const isSpread = (name: string): name is SpreadName => Object.hasOwn(SPREAD, name);
