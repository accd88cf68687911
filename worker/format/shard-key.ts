/**
 * Where a shard file lives on its backend (docs/FORMAT.md, "Shard keys"):
 * - a shelved unit (written with a key ring: its id is `<shelf>.<id>`, shelf.ts):
 *   `sg1/_<shelf>/<id>/<shardIndex>`, so a listing shows no bucket name;
 * - any other unit (written before shelves, or by a gateway with no key ring):
 *   `sg1/<bucket>/<unitId>/<shardIndex>`.
 * Beside a unit's shards lies its tag record, `…/<id>/tags` (tag-record.ts).
 * The one place the scheme is spelled: writers, readers, repair, the collector, the rebuild, the
 * meter and `shardgate rescue` build and parse keys here. Keys are per unit and immutable: a
 * new write gets a new unit id (ids.ts), so it never overwrites an older write's shards, and a
 * unit's id carries its shelf, so its keys never depend on which key is active now.
 * `sg1/` is the scheme's version: a listing of `sg1/` on a backend is every shard file it holds.
 * The first segment after `sg1/` (a bucket name, or `_` and a shelf) is the key's directory:
 * bucket names never start with `_`, so the two never collide.
 */

/** The prefix of every shard key (the scheme's version). */
export const SHARD_KEY_ROOT = 'sg1/';

/** What marks a directory as a shelf (bucket names start with a letter or digit). */
const SHELF_MARK = '_';

export interface ShardKeyParts {
  /** The bucket, when the key names it (an unshelved unit); null for a shelved one. */
  bucket: string | null;
  /** The key's directory: the bucket name, or `_<shelf>`. */
  directory: string;
  unitId: string;
  shardIndex: number;
}

/** The id of a unit shelved on `shelf` (`<shelf>.<id>`; unshelved ids have no dot). */
export function shelvedUnitId(shelf: string, id: string): string {
  return `${shelf}.${id}`;
}

/** The shelf a unit id records; null for an unshelved unit. */
export function shelfOfUnitId(unitId: string): string | null {
  const dot = unitId.indexOf('.');
  return dot < 0 ? null : unitId.slice(0, dot);
}

/** The directory of a shelf (`_<shelf>`). */
export function shelfDirectory(shelf: string): string {
  return `${SHELF_MARK}${shelf}`;
}

/** The prefix of every shard of one unit: `sg1/_<shelf>/<id>/` or `sg1/<bucket>/<unitId>/`. */
export function unitPrefix(bucket: string, unitId: string): string {
  const dot = unitId.indexOf('.');
  if (dot < 0) return `${SHARD_KEY_ROOT}${bucket}/${unitId}/`;
  return `${SHARD_KEY_ROOT}${SHELF_MARK}${unitId.slice(0, dot)}/${unitId.slice(dot + 1)}/`;
}

/** The key of shard `shardIndex` of unit `unitId` of `bucket` (a shelved unit's key ignores the bucket). */
export function shardKey(bucket: string, unitId: string, shardIndex: number): string {
  return `${unitPrefix(bucket, unitId)}${shardIndex}`;
}

/** The prefix of every unshelved shard of a bucket (`sg1/<bucket>/`), or of every shard when none is given. */
export function bucketPrefix(bucket?: string | null): string {
  return bucket ? `${SHARD_KEY_ROOT}${bucket}/` : SHARD_KEY_ROOT;
}

/** The prefix of every shard on a shelf (`sg1/_<shelf>/`). */
export function shelfPrefix(shelf: string): string {
  return `${SHARD_KEY_ROOT}${SHELF_MARK}${shelf}/`;
}

/** Every prefix a bucket's shards may live under: its own, and each of its shelves. */
export function prefixesOf(bucket: string, shelves: readonly string[]): string[] {
  return [bucketPrefix(bucket), ...shelves.map(shelfPrefix)];
}

/** What names a bucket's shelves, one per key: the key ring (format/seal.ts, KeyRing.shelvesOf). */
export interface ShelfNamer {
  shelvesOf(bucket: string): Promise<string[]>;
}

/** Every prefix `bucket`'s shards may live under: its own, and its shelf under each key of `ring` (none without a ring). */
export async function bucketShardPrefixes(bucket: string, ring?: ShelfNamer): Promise<string[]> {
  return prefixesOf(bucket, ring ? await ring.shelvesOf(bucket) : []);
}

/** The name of a unit's tag record under its prefix (beside the shards, `<unitId>/<shardIndex>`). */
export const TAG_RECORD_NAME = 'tags';

/** The key of unit `unitId`'s tag record: `<unitPrefix>tags`. */
export function tagRecordKey(bucket: string, unitId: string): string {
  return `${unitPrefix(bucket, unitId)}${TAG_RECORD_NAME}`;
}

/** The unit of a directory and a name under it (`_<shelf>`, `<id>` -> `<shelf>.<id>`). */
function unitOf(directory: string, name: string): { bucket: string | null; unitId: string } | null {
  if (!directory.startsWith(SHELF_MARK)) return name.includes('.') ? null : { bucket: directory, unitId: name };
  const shelf = directory.slice(SHELF_MARK.length);
  return shelf && !shelf.includes('.') && !name.includes('.') ? { bucket: null, unitId: shelvedUnitId(shelf, name) } : null;
}

const TAG_RECORD_KEY = /^sg1\/([^/]+)\/([^/]+)\/tags$/;

/** The bucket (null when shelved), directory and unit of a tag record's key; null for any other key. */
export function parseTagRecordKey(key: string): { bucket: string | null; directory: string; unitId: string } | null {
  const m = TAG_RECORD_KEY.exec(key);
  const unit = m && unitOf(m[1]!, m[2]!);
  return unit ? { ...unit, directory: m![1]! } : null;
}

const SHARD_KEY = /^sg1\/([^/]+)\/([^/]+)\/(0|[1-9][0-9]*)$/;

/** The parts of a shard key; null for any other key (parseShardKey(shardKey(b, u, i)) names u and i, and b unless u is shelved). */
export function parseShardKey(key: string): ShardKeyParts | null {
  const m = SHARD_KEY.exec(key);
  const unit = m && unitOf(m[1]!, m[2]!);
  return unit ? { ...unit, directory: m![1]!, shardIndex: Number(m![3]) } : null;
}

/** The directory of a key under `sg1/` (a bucket name or `_<shelf>`); null for anything else (a list over `sg1/`). */
export function directoryOfShardKey(key: string): string | null {
  if (!key.startsWith(SHARD_KEY_ROOT)) return null;
  const end = key.indexOf('/', SHARD_KEY_ROOT.length);
  return end > SHARD_KEY_ROOT.length ? key.slice(SHARD_KEY_ROOT.length, end) : null;
}

/**
 * Which bucket each directory belongs to, for `buckets` and a ring: each bucket's own name and
 * its shelves under every key of the ring. Directories absent from it are shelves of keys no
 * longer in the ring (or of buckets gone): their traffic and bytes stay unattributed.
 */
export async function bucketsByDirectory(buckets: readonly string[], ring?: ShelfNamer): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const b of buckets) {
    out.set(b, b);
    for (const shelf of ring ? await ring.shelvesOf(b) : []) out.set(shelfDirectory(shelf), b);
  }
  return out;
}
