/**
 * Where a shard file lives on its backend: `sg1/<bucket>/<unitId>/<shardIndex>` (docs/FORMAT.md),
 * and beside a unit's shards its tag record, `sg1/<bucket>/<unitId>/tags` (tag-record.ts).
 * The one place the scheme is spelled: writers, readers, repair, the collector, the rebuild, the
 * meter and `shardgate rescue` build and parse keys here. Keys are per unit and immutable: a
 * new write gets a new unit id (ids.ts), so it never overwrites an older write's shards.
 * `sg1/` is the scheme's version: a listing of `sg1/` on a backend is every shard file it holds.
 */

/** The prefix of every shard key (the scheme's version). */
export const SHARD_KEY_ROOT = 'sg1/';

export interface ShardKeyParts {
  bucket: string;
  unitId: string;
  shardIndex: number;
}

/** The key of shard `shardIndex` of unit `unitId` in `bucket`. */
export function shardKey(bucket: string, unitId: string, shardIndex: number): string {
  return `${SHARD_KEY_ROOT}${bucket}/${unitId}/${shardIndex}`;
}

/** The prefix of every shard of one unit: `sg1/<bucket>/<unitId>/`. */
export function unitPrefix(bucket: string, unitId: string): string {
  return `${SHARD_KEY_ROOT}${bucket}/${unitId}/`;
}

/** The prefix of every shard of a bucket (`sg1/<bucket>/`), or of every bucket when none is given. */
export function bucketPrefix(bucket?: string | null): string {
  return bucket ? `${SHARD_KEY_ROOT}${bucket}/` : SHARD_KEY_ROOT;
}

/** The name of a unit's tag record under its prefix (beside the shards, `<unitId>/<shardIndex>`). */
export const TAG_RECORD_NAME = 'tags';

/** The key of unit `unitId`'s tag record: `sg1/<bucket>/<unitId>/tags`. */
export function tagRecordKey(bucket: string, unitId: string): string {
  return `${unitPrefix(bucket, unitId)}${TAG_RECORD_NAME}`;
}

const TAG_RECORD_KEY = /^sg1\/([^/]+)\/([^/]+)\/tags$/;

/** The bucket and unit of a tag record's key; null for any other key. */
export function parseTagRecordKey(key: string): { bucket: string; unitId: string } | null {
  const m = TAG_RECORD_KEY.exec(key);
  return m ? { bucket: m[1]!, unitId: m[2]! } : null;
}

const SHARD_KEY = /^sg1\/([^/]+)\/([^/]+)\/(0|[1-9][0-9]*)$/;

/** The parts of a shard key; null for any other key (parseShardKey(shardKey(b, u, i)) is {b, u, i}). */
export function parseShardKey(key: string): ShardKeyParts | null {
  const m = SHARD_KEY.exec(key);
  return m ? { bucket: m[1]!, unitId: m[2]!, shardIndex: Number(m[3]) } : null;
}

/** The bucket of a key under `sg1/<bucket>/`; null for anything else (a list over `sg1/`). */
export function bucketOfShardKey(key: string): string | null {
  if (!key.startsWith(SHARD_KEY_ROOT)) return null;
  const end = key.indexOf('/', SHARD_KEY_ROOT.length);
  return end > SHARD_KEY_ROOT.length ? key.slice(SHARD_KEY_ROOT.length, end) : null;
}
