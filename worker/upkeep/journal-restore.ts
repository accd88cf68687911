/**
 * A bucket's catalog back from its journal on the backends (format/journal.ts), the first step
 * of `shardgate rebuild` (rebuild.ts): the segments of the bucket's instance are found among the
 * journal's shard files like any units (unit-scan.ts), read and checked (every block's XXH64,
 * sealed records' tags), replayed (catalog/journal-replay.ts) and written back into the bucket's
 * instance in batches: settings, every version and delete marker in its order, the current-object
 * rows, uploads in progress with their parts, what was held for deletion. The rebuild from shard
 * headers then adds only the writes newer than the journal.
 * Only into a bucket that holds no version: a journal restores a lost catalog, it never merges
 * into a live one (the catalog refuses; this says so and imports nothing). `merge`: the bucket
 * was recreated after its catalog was lost (catalog-loss.ts found it): the journal's rows go in
 * beside what was written since, and a row written since wins (a key's current object included).
 */
import type { Backend } from '../../backends/types.ts';
import { replayJournal } from '../catalog/journal-replay.ts';
import type { JournalCatalog, ObjectCatalog } from '../catalog/ports.ts';

/** What a restore writes and reads: the journal's rows imported, the live versions listed (a merge). */
export type RestoreCatalog = Pick<JournalCatalog, 'importJournal'> & Pick<ObjectCatalog, 'listVersions'>;
import { decodeSegment, JOURNAL_BUCKET, parseSegmentKey, type JournalSegment, type JournalValue } from '../format/journal.ts';
import type { CodedUnit } from '../format/manifest.ts';
import type { KeyRing } from '../format/seal.ts';
import { openCodedUnit } from '../engine/index.ts';
import { S3Error } from '../model/errors.ts';
import { readAll } from '../model/lent-chunks.ts';
import { scanUnits, type ScannedUnit } from './unit-scan.ts';
import { errorMessage } from '../model/error-message.ts';

/** Rows one import call carries at most. */
const BATCH_ROWS = 500;

export interface JournalRestore {
  /** Segments of the bucket found and read. */
  segments: number;
  /** The restored catalog's point in time: its newest segment's (null: no journal of the bucket found). */
  asOf: string | null;
  /** Rows written back. */
  rows: number;
  versions: number;
  deleteMarkers: number;
  /** The settings (state rows) restored, by name. */
  settings: string[];
  /** Journal segments (or units) found and not readable: changes they held may be missing. */
  unreadable: { id: string; reason: string }[];
  /** What makes the image doubtful (journal-replay.ts). */
  doubts: string[];
  /** Why nothing was imported, when nothing was. */
  skipped?: string;
  /**
   * Merging into a bucket recreated after its catalog was lost: keys written since, whose journal
   * versions were not imported (the later write stands, as an overwrite; the earlier versions'
   * shards stay on the backends, uncollected, for a rescue or a rebuild from headers).
   */
  keptNewer?: string[];
  /** Backends whose listing did not answer (unit-scan.ts): segments were read from the others. */
  unlisted?: string[];
}

/** How long a restored split bucket's partition segments stay on the backends before the collector takes them. */
const PARTITION_SEGMENTS_KEPT_MS = 7 * 86_400_000;

export async function restoreFromJournal(
  bucket: string,
  backends: Backend[],
  catalog: RestoreCatalog,
  ring?: KeyRing,
  options: { merge?: boolean } = {},
): Promise<JournalRestore> {
  const out: JournalRestore = { segments: 0, asOf: null, rows: 0, versions: 0, deleteMarkers: 0, settings: [], unreadable: [], doubts: [] };
  // The bucket's own journal and its partitions' (`<bucket>/<id>`): restored as one partition.
  const read = await readJournalSegments((instance) => instance === bucket || instance.startsWith(`${bucket}/`), backends, ring);
  if (read.unlisted.length) out.unlisted = read.unlisted;
  out.unreadable.push(...read.unreadable);
  const segments = read.segments;
  out.segments = segments.length;
  const image = replayJournal(segments.map((s) => s.segment)).get(bucket);
  if (!image) return out;
  out.asOf = image.takenAt;
  out.doubts = image.doubts;

  const rows: { t: string; r: Record<string, JournalValue> }[] = [];
  // Merging: a key written since the loss keeps only that write (two histories of one key cannot be
  // ordered: their version sequences both start at 1).
  const live = options.merge ? await liveKeys(catalog, bucket) : new Set<string>();
  const keptNewer = new Set<string>();
  for (const [t, table] of image.tables) {
    if (t === 'buckets') continue;
    for (const r of table.values()) {
      if ((t === 'versions' || t === 'objects') && live.has(String(r.key))) {
        keptNewer.add(String(r.key));
        continue;
      }
      rows.push({ t, r });
    }
  }
  if (keptNewer.size) out.keptNewer = [...keptNewer].sort();
  // A split bucket's partitions' segments: their rows are in the image, their files go to the
  // restored bucket's garbage (after PARTITION_SEGMENTS_KEPT_MS, so a restore can be redone meanwhile).
  const partitionSegments = segments.filter((s) => s.segment.instance !== bucket);
  let garbageId = Math.max(0, ...rows.filter((x) => x.t === 'garbage').map((x) => Number(x.r.id))) + 1;
  for (const s of partitionSegments) {
    rows.push({
      t: 'garbage',
      r: { id: garbageId++, not_before: Date.now() + PARTITION_SEGMENTS_KEPT_MS, entry: JSON.stringify({ bucket: JOURNAL_BUCKET, units: s.units }) },
    });
  }
  // The bucket's journal goes on after its own segments (the restored bucket is one partition).
  const own = segments.filter((s) => s.segment.instance === bucket);
  const finish = {
    newest: image.newest,
    generation: Math.max(...(own.length ? own : segments).map((s) => s.segment.generation)),
    files: own.map((s) => ({ segment: s.segment.segment, generation: s.segment.generation, units: s.units, takenAt: Date.parse(s.segment.takenAt) })),
  };
  try {
    for (let i = 0; i === 0 || i < rows.length; i += BATCH_ROWS) {
      const last = i + BATCH_ROWS >= rows.length;
      out.rows += await catalog.importJournal(bucket, {
        rows: rows.slice(i, i + BATCH_ROWS),
        first: i === 0,
        ...(options.merge ? { merge: true } : {}),
        ...(last ? { finish } : {}),
      });
    }
  } catch (err) {
    if (!(err instanceof S3Error && err.code === 'InvalidRequest')) throw err;
    out.skipped = err.message;
    return out;
  }
  const versions = rows.filter((r) => r.t === 'versions');
  out.versions = versions.filter((r) => Number(r.r.delete_marker) !== 1).length;
  out.deleteMarkers = versions.length - out.versions;
  out.settings = rows
    .filter((r) => r.t === 'state')
    .map((r) => String(r.r.name))
    .sort();
  return out;
}

/**
 * The journal segments of the instances `wanted` accepts, found among the journal's shard files
 * on `backends` (unit-scan.ts), read and checked; what cannot be read is named, not judged.
 */
export async function readJournalSegments(
  wanted: (instance: string) => boolean,
  backends: Backend[],
  ring?: KeyRing,
): Promise<{ segments: { segment: JournalSegment; units: CodedUnit[] }[]; unreadable: { id: string; reason: string }[]; unlisted: string[] }> {
  const unreadable: { id: string; reason: string }[] = [];
  const scan = await scanUnits(JOURNAL_BUCKET, backends, ring);
  // Units whose header could not be read may be any instance's: named, not judged.
  unreadable.push(...scan.unrecoverable.map((u) => ({ id: `unit ${u.unitId}`, reason: u.reason })));
  const writes = new Map<string, ScannedUnit[]>();
  for (const u of scan.units) {
    const named = parseSegmentKey(u.info.header.key);
    if (!named || !wanted(named.instance)) continue;
    const id = u.info.header.segment?.writeId ?? u.unit.unitId;
    writes.set(id, [...(writes.get(id) ?? []), u]);
  }
  const byId = new Map(backends.map((b) => [b.id, b]));
  const segments: { segment: JournalSegment; units: CodedUnit[] }[] = [];
  for (const [id, list] of writes) {
    const key = list[0]!.info.header.key;
    try {
      list.sort((a, b) => (a.info.header.segment?.index ?? 0) - (b.info.header.segment?.index ?? 0));
      const count = list[0]!.info.header.segment?.count ?? 1;
      if (list.length !== count) throw new Error(`${list.length} of its ${count} units found`);
      // The units' chunks are lent (valid until the next read: a sealed record is released then,
      // a reader's block buffer reused), so each is copied into the segment's bytes as it is read.
      const bytes = new Uint8Array(list.reduce((n, u) => n + u.unit.size, 0));
      let at = 0;
      for (const { unit } of list) {
        const stream = await openCodedUnit({ bucket: JOURNAL_BUCKET, unit, backends: byId, start: 0, end: unit.size - 1 }, ring);
        const got = await readAll(stream, `journal restore, segment ${key}`, unit.size);
        if (got.length !== unit.size) throw new Error(`unit ${unit.unitId}: ${got.length} of its ${unit.size} bytes read`);
        bytes.set(got, at);
        at += unit.size;
      }
      const segment = decodeSegment(bytes);
      const named = parseSegmentKey(key)!;
      if (segment.instance !== named.instance || segment.segment !== named.segment)
        throw new Error(`its content says segment ${segment.segment} of ${segment.instance}`);
      segments.push({ segment, units: list.map((u) => u.unit) });
    } catch (err) {
      unreadable.push({ id: `segment ${key} (${id})`, reason: errorMessage(err) });
    }
  }
  return { segments, unreadable, unlisted: scan.unlisted };
}

/** Every key the bucket's catalog holds a version or marker of now. */
async function liveKeys(catalog: RestoreCatalog, bucket: string): Promise<Set<string>> {
  const keys = new Set<string>();
  let keyMarker: string | null = null,
    versionIdMarker: string | null = null;
  for (;;) {
    const page = await catalog.listVersions(bucket, { prefix: '', delimiter: null, keyMarker, versionIdMarker, maxKeys: 1000 });
    for (const v of page.versions) keys.add(v.key);
    if (!page.isTruncated) return keys;
    keyMarker = page.nextKeyMarker;
    versionIdMarker = page.nextVersionIdMarker;
  }
}
