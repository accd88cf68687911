/**
 * The catalog as its journal stored it (format/journal.ts): segments replayed into each
 * instance's tables, then read as buckets, their settings and their objects' versions. Pure: no
 * SQL and no I/O, so `shardgate rescue` (Node, the backends alone) and the tests use the same
 * reading of rows that the catalog wrote (sql-schema.ts).
 * A replay starts at the first segment of the newest generation whose dump completed (earlier
 * segments are superseded); every later segment applies in number order, the later record of a
 * row winning. Anything that makes the image doubtful is said, never papered over: no completed
 * generation, a segment acknowledged before another and not found, a schema newer than this code.
 */
import type { CodedUnit, ObjectManifest } from '../format/manifest.ts';
import { BUCKET_LIST_INSTANCE, type JournalSegment, type JournalValue } from '../format/journal.ts';
import { unitsOf } from './rules.ts';
import { ownerOf, parsePartitionMap, PARTITION_MAP } from './partition-map.ts';
import { bucketInstance, partitionJournal } from './routing.ts';
import { SCHEMA_VERSION } from './sql-schema.ts';
import type { GarbageUnits } from './types.ts';

type Row = Record<string, JournalValue>;

export interface InstanceImage {
  instance: string;
  /** Table -> primary key (JSON) -> row. */
  tables: Map<string, Map<string, Row>>;
  /** The newest segment applied, and when it was taken: the image's point in time. */
  newest: number;
  takenAt: string;
  /** The segments applied. */
  applied: number;
  /** A generation's dump completed within what was applied (false: rows may be missing). */
  complete: boolean;
  /** What makes the image doubtful (empty: nothing known). */
  doubts: string[];
}

/** Replays each instance's segments (any order, any mix of instances). */
export function replayJournal(segments: JournalSegment[]): Map<string, InstanceImage> {
  const byInstance = new Map<string, JournalSegment[]>();
  for (const s of segments) byInstance.set(s.instance, [...(byInstance.get(s.instance) ?? []), s]);
  const images = new Map<string, InstanceImage>();
  for (const [instance, list] of byInstance) {
    list.sort((a, b) => a.segment - b.segment);
    const completing = list.filter((s) => s.completes).at(-1);
    const start = completing ? completing.generationFirst : list[0]!.segment;
    const applied = list.filter((s) => s.segment >= start);
    const doubts: string[] = [];
    if (!completing) doubts.push(`no complete generation found: the image holds only the rows the ${applied.length} segment(s) found name`);
    const numbers = new Set(list.map((s) => s.segment));
    // Two different segments under one number: two catalogs wrote this instance's journal (one
    // lost and a new one started from 1); the replay mixes them (catalog-loss.ts prevents it now).
    const seen = new Map<number, string>();
    const twice = new Set<number>();
    for (const s of list) {
      const id = `${s.generation} ${s.takenAt}`;
      if (seen.has(s.segment) && seen.get(s.segment) !== id) twice.add(s.segment);
      seen.set(s.segment, id);
    }
    if (twice.size)
      doubts.push(
        `segment(s) ${[...twice].slice(0, 5).join(', ')}${twice.size > 5 ? ', ...' : ''} found twice with different contents: two catalogs wrote this journal (a catalog lost and started again); the image mixes them`,
      );
    for (const s of applied) {
      if (s.previous >= start && !numbers.has(s.previous))
        doubts.push(`segment ${s.previous} was stored before segment ${s.segment} and is not found: changes it held may be missing`);
      if (s.schema > SCHEMA_VERSION)
        doubts.push(`segment ${s.segment} is in catalog schema ${s.schema}, newer than this release's ${SCHEMA_VERSION}: use the newer release`);
    }
    const tables = new Map<string, Map<string, Row>>();
    for (const s of applied) {
      for (const r of s.records) {
        const table = tables.get(r.t) ?? new Map<string, Row>();
        tables.set(r.t, table);
        const k = JSON.stringify(r.k);
        if (r.r) table.set(k, r.r);
        else table.delete(k);
      }
    }
    const last = applied.at(-1)!;
    images.set(instance, { instance, tables, newest: last.segment, takenAt: last.takenAt, applied: applied.length, complete: Boolean(completing), doubts });
  }
  return foldPartitions(images);
}

/** State rows of a split bucket's partitions that only its live catalog uses (partition-map.ts, partition-mirror.ts). */
const PARTITION_STATE = new Set([
  'partition-map',
  'partition-range',
  'partition-plan',
  'partition-next-id',
  'mirror-generation',
  'mirror-pending',
  'retiring',
  // A split or merge under way when the journal was written: the rescued bucket is one partition, with none.
  'partition-split',
  'partition-split-at',
  'partition-merge',
  'partition-merge-in',
  'partition-small',
]);

/**
 * A split bucket's partitions (journal instances `<bucket>/<id>`, docs/PARTITIONS.md) folded into
 * their bucket's image: their versions, uploads, parts and garbage join the root's, their copies
 * of the settings are left for the root's own, and the partition map goes, so an image (and a
 * rescue made from it) is the bucket as one partition. A partition whose root's journal was not
 * found stands as its bucket's image, with a doubt saying so.
 * Splits on line: a key's rows may be in two images at once (copied to the new partition before
 * the old one's deletion of them reached its journal, or the other way round). The root's map
 * decides: a key's rows come from the image of the partition the map names, and another image's
 * rows of that key count only when that partition's image is missing or its dump incomplete (then
 * what the splitting partition last journaled is the best there is, and a doubt says so). So a
 * key deleted in its new partition is never brought back from the old one's journal.
 */
function foldPartitions(images: Map<string, InstanceImage>): Map<string, InstanceImage> {
  const groups = new Map<string, InstanceImage[]>();
  for (const [instance, image] of images) {
    if (instance === BUCKET_LIST_INSTANCE) continue;
    const bucket = instance.split('/')[0]!;
    groups.set(bucket, [...(groups.get(bucket) ?? []), image]);
  }
  for (const [bucket, members] of groups) {
    if (members.length === 1 && members[0]!.instance === bucket) continue; // a bucket never split
    for (const m of members) images.delete(m.instance);
    images.set(bucket, foldBucket(bucket, members));
  }
  for (const image of images.values()) {
    const state = image.tables.get('state');
    for (const [k, r] of state ?? []) if (PARTITION_STATE.has(String(r.name))) state!.delete(k);
  }
  return images;
}

function foldBucket(bucket: string, members: InstanceImage[]): InstanceImage {
  const found = members.find((m) => m.instance === bucket);
  const root: InstanceImage = found
    ? { ...found, tables: new Map(), doubts: [...found.doubts] }
    : {
        ...members[0]!,
        instance: bucket,
        tables: new Map(),
        doubts: [`the journal of partition ${members[0]!.instance} was found without its bucket's own: settings are missing`],
      };
  const settingsFrom = found ?? members[0]!;
  for (const [t, rows] of settingsFrom.tables) if (t === 'buckets' || t === 'state') root.tables.set(t, new Map(rows));
  const mapRow = found ? [...(found.tables.get('state')?.values() ?? [])].find((r) => r.name === PARTITION_MAP) : undefined;
  const map = mapRow ? parsePartitionMap(String(mapRow.value)) : null;
  const byJournal = new Map(members.map((m) => [m.instance, m]));
  /** The image whose rows of `key` count alone (null: every image's, as no image is sure). */
  const ownerOfKey = (key: string): InstanceImage | null => {
    if (map === null) return null;
    const owner = byJournal.get(journalOfPartition(ownerOf(map, key), bucket));
    return owner?.complete ? owner : null;
  };
  const ownerMissing = new Set<string>();
  for (const m of [...members].sort((a, b) => (a.instance === bucket ? -1 : b.instance === bucket ? 1 : 0))) {
    const uploads = m.tables.get('uploads');
    const keyOfRow = (t: string, r: Row): string | null =>
      t === 'versions' || t === 'objects' || t === 'uploads'
        ? String(r.key)
        : t === 'parts'
          ? ((uploads?.get(JSON.stringify([r.upload_id]))?.key as string | undefined) ?? null)
          : null;
    for (const [t, rows] of m.tables) {
      if (t === 'buckets' || t === 'state') continue;
      const into = root.tables.get(t) ?? new Map<string, Row>();
      root.tables.set(t, into);
      // Garbage rows and events are numbered per instance: a partition's take the next free numbers
      // of the root's (events in their partition's order).
      const renumbered = t === 'garbage' || t === 'event_outbox';
      let next = renumbered ? Math.max(0, ...[...into.values()].map((r) => Number(r.id))) + 1 : 0;
      const ordered = t === 'event_outbox' ? [...rows].sort((a, b) => Number(a[1].id) - Number(b[1].id)) : rows;
      for (const [k, r] of ordered) {
        if (renumbered) {
          const id = next++;
          into.set(JSON.stringify([id]), { ...r, id });
          continue;
        }
        const key = keyOfRow(t, r);
        const owner = key === null ? null : ownerOfKey(key);
        if (owner !== null && owner !== m) continue; // the partition the map names holds this key's truth
        if (owner === null && key !== null && map !== null && m.instance !== journalOfPartition(ownerOf(map, key), bucket)) ownerMissing.add(key);
        into.set(k, r);
      }
    }
    if (m !== found) {
      root.complete &&= m.complete;
      root.doubts.push(...m.doubts.map((d) => `partition ${m.instance}: ${d}`));
    }
  }
  if (ownerMissing.size) {
    root.doubts.push(
      `${ownerMissing.size} keys were taken from the journal of a partition they had left, as the journal of the partition holding them was missing or incomplete`,
    );
  }
  return root;
}

/** A partition's instance name as its journal is named (the root's: the bucket). */
function journalOfPartition(instance: string, bucket: string): string {
  return instance === bucketInstance(bucket) ? bucket : partitionJournal(instance);
}

export interface VersionImage {
  key: string;
  /** The stored version id; S3 shows 'null' for the null version (`nullVersion`). */
  versionId: string;
  nullVersion: boolean;
  /** Commit order within the key (higher: newer). */
  seq: number;
  deleteMarker: boolean;
  /** The stored manifest (null for a delete marker). */
  manifest: ObjectManifest | null;
  lastModified: string;
  /** The key's current version (the newest, not a delete marker). */
  current: boolean;
}

export interface BucketImage {
  name: string;
  region: string;
  created: number;
  /** The bucket's settings: its state rows (versioning, cors, tagging, lifecycle, object-lock, ...), JSON parsed where it is JSON. */
  settings: Record<string, unknown>;
  versions: VersionImage[];
  /** Multipart uploads in progress (their parts are not objects). */
  uploads: number;
  /** Every unit the catalog knew of: its versions', its open uploads' parts', and those held for deletion. */
  knownUnits: Set<string>;
  /** When this bucket's image was taken (its instance's newest segment). */
  takenAt: string;
  doubts: string[];
}

const rows = (image: InstanceImage, table: string) => [...(image.tables.get(table)?.values() ?? [])];

/**
 * The buckets the journal holds: those in the bucket list's image, and those whose own image is
 * newer than it (created after the list's last segment); each with its own instance's image. An
 * instance the list does not hold and older than it is a deleted bucket's (`unlisted`).
 */
export function bucketImages(images: Map<string, InstanceImage>): {
  buckets: BucketImage[];
  listed: string[];
  unlisted: string[];
  unlistedBuckets: BucketImage[];
} {
  const list = images.get(BUCKET_LIST_INSTANCE);
  const instances = [...images.keys()].filter((i) => i !== BUCKET_LIST_INSTANCE);
  // Without the bucket list's journal, every bucket instance found stands for a bucket.
  const named = new Set(list ? rows(list, 'buckets').map((r) => String(r.name)) : instances);
  const listed = instances.filter((i) => named.has(i) || (list !== undefined && images.get(i)!.takenAt > list.takenAt)).sort();
  const buckets: BucketImage[] = [];
  for (const name of listed) {
    const image = images.get(name)!;
    const own = rows(image, 'buckets').find((r) => r.name === name);
    if (own) buckets.push(bucketImage(name, own, image));
  }
  const unlisted = instances.filter((i) => !listed.includes(i));
  // Instances the list does not hold: a deleted bucket's, or one the list lost (a rescue reports them, never drops them silently).
  const unlistedBuckets = unlisted.flatMap((name) => {
    const image = images.get(name)!;
    const own = rows(image, 'buckets').find((r) => r.name === name);
    return own ? [bucketImage(name, own, image)] : [];
  });
  return { buckets, listed, unlisted, unlistedBuckets };
}

function bucketImage(name: string, own: Row, image: InstanceImage): BucketImage {
  const settings: Record<string, unknown> = {};
  for (const r of rows(image, 'state')) {
    const value = String(r.value);
    try {
      settings[String(r.name)] = JSON.parse(value);
    } catch {
      settings[String(r.name)] = value;
    }
  }
  const current = new Map(rows(image, 'objects').map((r) => [String(r.key), String(r.version_id)]));
  const knownUnits = new Set<string>();
  const versions: VersionImage[] = rows(image, 'versions').map((r) => {
    const deleteMarker = Number(r.delete_marker) === 1;
    const parsed = JSON.parse(String(r.manifest)) as ObjectManifest | { lastModified: string };
    const manifest = deleteMarker ? null : (parsed as ObjectManifest);
    if (manifest) for (const u of unitsOf(manifest)) knownUnits.add(u.unitId);
    return {
      key: String(r.key),
      versionId: String(r.version_id),
      nullVersion: Number(r.null_version) === 1,
      seq: Number(r.seq),
      deleteMarker,
      manifest,
      lastModified: parsed.lastModified,
      current: current.get(String(r.key)) === String(r.version_id),
    };
  });
  for (const r of rows(image, 'parts')) {
    const record = JSON.parse(String(r.record)) as { units?: CodedUnit[] };
    for (const u of record.units ?? []) knownUnits.add(u.unitId);
  }
  for (const r of rows(image, 'garbage')) {
    const entry = JSON.parse(String(r.entry)) as GarbageUnits;
    for (const u of entry.units) knownUnits.add(u.unitId);
    for (const id of entry.unitIds ?? []) knownUnits.add(id);
  }
  return {
    name,
    region: String(own.region),
    created: Number(own.created),
    settings,
    versions,
    uploads: rows(image, 'uploads').length,
    knownUnits,
    takenAt: image.takenAt,
    doubts: image.doubts,
  };
}
