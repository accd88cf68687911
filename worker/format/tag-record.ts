/**
 * The tag record, as stored (docs/FORMAT.md, "Tag records"): an object's tags as last set by
 * PutObjectTagging / DeleteObjectTagging, in `sg1/<bucket>/<unitId>/tags` beside the shards of
 * the object's first unit. A shard header holds the tags of the write; this record is how the
 * backends alone still know the tags as they are. Writing and reading it: engine/tag-record.ts.
 */
import type { Tag } from '../model/tagging.ts';
import type { CodedUnit } from './manifest.ts';
import type { DataKey } from './seal.ts';

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

export { tagRecordKey } from './shard-key.ts';

const utf8 = new TextEncoder();

/**
 * A sealed unit's tag record as stored: the record's JSON sealed under the unit's data key
 * (DataKey.sealBlob, AAD "shardgate tags v1 <unitId>"), so a backend learns neither the key nor
 * the tags. (An SSE-C unit gets no tag record: its data key opens only with the client's key.)
 */
export interface SealedTagRecordFile {
  format: 1;
  unitId: string;
  sealed: string;
}

const tagAad = (unitId: string) => `shardgate tags v1 ${unitId}`;

export async function encodeTagRecord(record: TagRecord, dek?: DataKey): Promise<Uint8Array> {
  const plain = utf8.encode(JSON.stringify(record));
  if (!dek) return plain;
  const file: SealedTagRecordFile = { format: 1, unitId: record.unitId, sealed: await dek.sealBlob(plain, tagAad(record.unitId)) };
  return utf8.encode(JSON.stringify(file));
}

/**
 * The record in `bytes` (a sealed one opened with `dek`), or null when they are not one (another
 * file, a cut-off write, a sealed record without its key or failing its tag).
 */
export async function decodeTagRecord(bytes: Uint8Array, dek?: DataKey): Promise<TagRecord | null> {
  try {
    const file = JSON.parse(new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes)) as Partial<SealedTagRecordFile>;
    if (typeof file.sealed === 'string' && typeof file.unitId === 'string') {
      if (!dek) return null;
      return decodePlainTagRecord(await dek.openBlob(file.sealed, tagAad(file.unitId)));
    }
    return decodePlainTagRecord(bytes);
  } catch {
    return null;
  }
}

function decodePlainTagRecord(bytes: Uint8Array): TagRecord | null {
  try {
    const r = JSON.parse(new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes)) as Partial<TagRecord>;
    const tagsOk = Array.isArray(r.tags) && r.tags.every((t) => t && typeof t.key === 'string' && typeof t.value === 'string');
    if (r.format !== 1 || typeof r.bucket !== 'string' || typeof r.key !== 'string' || typeof r.unitId !== 'string' || !tagsOk || typeof r.setAt !== 'string')
      return null;
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
