/**
 * The catalog journal in a rescue (format/journal.ts, catalog/journal-replay.ts): its segments
 * are objects of JOURNAL_BUCKET among the shards found, read and checked like any object, then
 * replayed into the buckets the catalog held: their settings, every version, inline objects'
 * bytes and multipart objects' exact part lists, which no shard header holds.
 * What the journal says wins over the shard headers for every unit it knows (a version it lists,
 * a unit it holds for deletion); shards of units it does not know are writes after its last
 * segment (rescue.ts plans those from their headers, as without a journal).
 */
import type { PlannedObject, PlannedUnit, PlannedWrite } from './plan.ts';
import { readObject } from './read.ts';
import type { FoundShard, ShardIndex } from './scan.ts';
import { decodeSegment, parseSegmentKey, type JournalSegment } from '../../worker/format/journal.ts';
import type { CodedUnit, ObjectManifest } from '../../worker/format/manifest.ts';
import type { KeyRing } from '../../worker/format/seal.ts';
import type { OpenedHeader } from '../../worker/format/sealed-header.ts';
import { shardKey } from '../../worker/format/shard-key.ts';
import type { BucketImage, VersionImage } from '../../worker/catalog/journal-replay.ts';
import { errorMessage } from '../../worker/model/error-message.ts';

export interface JournalRead {
  segments: JournalSegment[];
  /** Segments found and not readable (too few shards, a failed check, not a segment). */
  unreadable: { key: string; reason: string }[];
}

/** Reads every planned object of JOURNAL_BUCKET as a segment (each a few MiB at most). */
export async function readJournal(objects: PlannedObject[], index: ShardIndex, ring: KeyRing | undefined): Promise<JournalRead> {
  const out: JournalRead = { segments: [], unreadable: [] };
  for (const o of objects) {
    const named = parseSegmentKey(o.key);
    try {
      if (!named) throw new Error('not a journal segment key');
      const chunks: Uint8Array[] = [];
      const report = await readObject(index, o, ring, (c) => void chunks.push(c.slice()));
      if (report.md5Mismatches.length) throw new Error(`MD5 differs from the footer's: ${JSON.stringify(report.md5Mismatches)}`);
      const segment = decodeSegment(Buffer.concat(chunks));
      if (segment.instance !== named.instance || segment.segment !== named.segment)
        throw new Error(`its content says ${segment.instance} segment ${segment.segment}`);
      out.segments.push(segment);
    } catch (err) {
      out.unreadable.push({ key: o.key, reason: errorMessage(err) });
    }
  }
  return out;
}

/** A current version as the journal holds it: coded (planned for the readers) or inline (its manifest's bytes). */
export type JournalObject =
  | { kind: 'coded'; version: VersionImage; planned: PlannedObject }
  | { kind: 'inline'; version: VersionImage; bucket: string; manifest: ObjectManifest };

/** The bucket's current versions under `prefix` (every stored version with `all`), planned from their manifests. */
export function journalObjects(bucket: BucketImage, index: ShardIndex, prefix: string, all = false): JournalObject[] {
  const out: JournalObject[] = [];
  for (const v of bucket.versions) {
    if ((!v.current && !all) || !v.manifest || !v.key.startsWith(prefix)) continue;
    const m = v.manifest;
    if (m.storage.kind === 'inline') out.push({ kind: 'inline', version: v, bucket: bucket.name, manifest: m });
    else out.push({ kind: 'coded', version: v, planned: plannedFromManifest(bucket.name, v, m.storage.units, index) });
  }
  return out;
}

/** The manifest's units as the readers take them: shards no source has are missing (decoded around). */
function plannedFromManifest(bucket: string, v: VersionImage, units: CodedUnit[], index: ShardIndex): PlannedObject {
  const m = v.manifest!;
  const planned = (u: CodedUnit): PlannedUnit => {
    const found = new Map<number, FoundShard>();
    const missing = new Set(u.missing);
    u.placement.forEach((_, i) => {
      const shard = index.find(shardKey(bucket, u.unitId, i));
      if (shard) found.set(i, shard as FoundShard);
      else missing.add(i);
    });
    return { unit: { ...u, missing: [...missing].sort((a, b) => a - b) }, header: { bucket, key: v.key } as OpenedHeader, found };
  };
  // One write for a single PUT (its ETag is its MD5); one per part for a multipart object (each
  // part of one clear unit checked against that unit's MD5; a sealed unit's recorded MD5 is not
  // its plaintext's, and each of its records' AES-GCM tags authenticates it instead). Every block
  // is checked by its XXH64 anyway.
  // An SSE-KMS object's ETag is not its MD5 (model/sse.ts etagFor): its sealed records' tags authenticate it instead.
  const singleMd5 = m.metadata.sse?.kind === 'kms' ? undefined : etagMd5(m.etag);
  const parts = new Map<number, CodedUnit[]>();
  for (const u of units) parts.set(u.partNumber ?? 0, [...(parts.get(u.partNumber ?? 0) ?? []), u]);
  const writes: PlannedWrite[] = [...parts].map(([part, list]) => {
    const size = list.reduce((n, u) => n + u.size, 0);
    const md5 = m.partsCount ? (list.length === 1 && !list[0]!.seal ? list[0]!.md5 : undefined) : singleMd5;
    return {
      id: `${v.versionId}${part ? `#${part}` : ''}`,
      units: list.map(planned),
      size,
      createdAt: v.lastModified,
      md5Checks: md5 ? [{ from: 0, to: size, md5 }] : [],
      ...(part ? { partNumber: part } : {}),
    };
  });
  return {
    bucket,
    key: v.key,
    size: m.size,
    createdAt: v.lastModified,
    metadata: m.metadata,
    writes,
    ...(m.partsCount ? { multipart: { uploadId: '(from the journal)', parts: m.partsCount } } : {}),
  };
}

/** The MD5 (hex) a single PUT's ETag is; undefined for a multipart-style or other ETag. */
export function etagMd5(etag: string): string | undefined {
  return /^"?([0-9a-f]{32})"?$/.exec(etag)?.[1];
}
