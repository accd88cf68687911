/**
 * The tag record, as stored (docs/FORMAT.md, "Tag records"): an object's tags as last set by
 * PutObjectTagging / DeleteObjectTagging, in `sg1/<bucket>/<unitId>/tags` beside the shards of
 * the object's first unit. A shard header holds the tags of the write; this record is how the
 * backends alone still know the tags as they are. Writing and reading it: engine/tag-record.ts.
 */
import type { Tag } from '../model/tagging.ts';
import type { CodedUnit } from './manifest.ts';

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

export { TAG_RECORD_NAME, tagRecordKey } from './shard-key.ts';

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

/** Copies a tag change needs to count as stored: the default quorum of a write of the unit's
 *  kind (k+1 for a code, a majority of replicas). */
export function tagRecordQuorum(unit: CodedUnit): number {
  const n = unit.k + unit.m;
  return unit.codec === 'replica' ? Math.floor(n / 2) + 1 : Math.min(n, unit.k + 1);
}
