/**
 * The tag record: an object's tags as last set by PutObjectTagging / DeleteObjectTagging, kept
 * beside its shards so that the backends alone still tell the truth about them. A shard header is
 * written once, with the tags of the write; changing the tags later changes the catalog, and
 * without this record a catalog rebuilt from the backends would bring the write's tags back.
 *
 * Where: `sg1/<bucket>/<unitId>/tags`, for the object's first unit (the one a rebuild finds the
 * object by; the only one, unless a single PUT was cut into segments), on every backend of that
 * unit's placement. Multipart objects get none (a rebuild cannot restore them: their part list
 * lives only in the catalog), inline objects neither (no shards).
 * What: a small JSON document (docs/FORMAT.md, "Tag records"): format, bucket, key, unit id, the
 * tags (sorted by key; [] for none) and when they were set.
 * Lifetime: the catalog marks the unit (`CodedUnit.tagRecord`) in the same step that changes the
 * tags, before any record is written, so the collector deletes the record with the unit's shards
 * and no record outlives its object. A rebuild reads every copy and takes the newest.
 * Known gap: two PutObjectTagging calls on one object from two isolates at the same moment are
 * ordered by the catalog, the copies by their `setAt` (each isolate's clock), which may disagree.
 */
import type { Backend } from '../../backends/types.ts';
import { S3Error } from '../model/errors.ts';
import type { Tag } from '../model/tagging.ts';
import type { CodedUnit } from '../catalog/manifest.ts';

export interface TagRecord {
  format: 1;
  bucket: string;
  key: string;
  unitId: string;
  /** Sorted by key; [] when the object has no tags. */
  tags: Tag[];
  /** ISO 8601: when PutObjectTagging / DeleteObjectTagging set them. */
  setAt: string;
}

/** The record's name under the unit's prefix (beside the shards, `<unitId>/<shardIndex>`). */
export const TAG_RECORD_NAME = 'tags';

export function tagRecordKey(bucket: string, unitId: string): string {
  return `sg1/${bucket}/${unitId}/${TAG_RECORD_NAME}`;
}

const utf8 = new TextEncoder();

export function encodeTagRecord(record: TagRecord): Uint8Array {
  return utf8.encode(JSON.stringify(record));
}

/** The record in `bytes`, or null when they are not one (another file, a cut-off write). */
export function decodeTagRecord(bytes: Uint8Array): TagRecord | null {
  try {
    const r = JSON.parse(new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes)) as Partial<TagRecord>;
    const tagsOk = Array.isArray(r.tags) && r.tags.every((t) => t && typeof t.key === 'string' && typeof t.value === 'string');
    if (r.format !== 1 || typeof r.bucket !== 'string' || typeof r.key !== 'string' || typeof r.unitId !== 'string' || !tagsOk || typeof r.setAt !== 'string') return null;
    return r as TagRecord;
  } catch {
    return null;
  }
}

/** Copies a tag change needs to count as stored: the default quorum of a write of the unit's kind. */
export function tagRecordQuorum(unit: CodedUnit): number {
  const n = unit.k + unit.m;
  return unit.codec === 'replica' ? Math.floor(n / 2) + 1 : Math.min(n, unit.k + 1);
}

/**
 * Writes the record to every backend of the unit's placement; fewer than tagRecordQuorum copies
 * stored is a 503 (the catalog already holds the new tags: the client's retry writes them again).
 */
export async function writeTagRecord(byId: Map<string, Backend>, unit: CodedUnit, record: TagRecord): Promise<void> {
  const bytes = encodeTagRecord(record);
  const key = tagRecordKey(record.bucket, unit.unitId);
  const results = await Promise.allSettled(
    unit.placement.map(async (id) => {
      const backend = byId.get(id);
      if (!backend) throw new Error(`backend ${id} is not configured`);
      await backend.put(key, bytes, bytes.length);
    }),
  );
  const stored = results.filter((r) => r.status === 'fulfilled').length;
  if (stored < tagRecordQuorum(unit)) {
    throw new S3Error('ServiceUnavailable', `The tags were set but stored beside the object's data on only ${stored} of ${unit.placement.length} backends; send the request again.`);
  }
}

/** The newest copy of the unit's record on `backends` (each asked once), or null when no readable copy exists. */
export async function readTagRecord(backends: Backend[], bucket: string, unitId: string): Promise<TagRecord | null> {
  const key = tagRecordKey(bucket, unitId);
  const copies = await Promise.all(
    backends.map(async (b) => {
      try {
        const { body } = await b.get(key);
        const record = decodeTagRecord(new Uint8Array(await new Response(body).arrayBuffer()));
        return record && record.bucket === bucket && record.unitId === unitId ? record : null;
      } catch {
        return null; // missing (NotFound), or this copy unreadable now: the others decide
      }
    }),
  );
  return copies.reduce<TagRecord | null>((newest, r) => (r && (!newest || r.setAt > newest.setAt) ? r : newest), null);
}
