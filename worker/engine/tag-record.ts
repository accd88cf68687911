/**
 * Writing and reading tag records (the format: format/tag-record.ts, docs/FORMAT.md). A shard
 * header is written once, with the tags of the write; changing the tags later changes the
 * catalog, and without a record a catalog rebuilt from the backends would bring the write's tags
 * back.
 * Where: beside the object's first unit (the one a rebuild finds the object by; the only one,
 * unless a single PUT was cut into segments), on every backend of that unit's placement.
 * Multipart objects get none (a rebuild cannot restore them: their part list lives only in the
 * catalog), inline objects neither (no shards).
 * Lifetime: the catalog marks the unit (`CodedUnit.tagRecord`) in the same step that changes the
 * tags, before any record is written, so the collector deletes the record with the unit's shards
 * and no record outlives its object. A rebuild reads every copy and takes the newest.
 * Known gap: two PutObjectTagging calls on one object from two isolates at the same moment are
 * ordered by the catalog, the copies by their `setAt` (each isolate's clock), which may disagree.
 */
import type { Backend } from '../../backends/types.ts';
import { S3Error } from '../model/errors.ts';
import type { CodedUnit } from '../format/manifest.ts';
import type { DataKey } from '../format/seal.ts';
import { decodeTagRecord, encodeTagRecord, tagRecordKey, tagRecordQuorum, type TagRecord } from '../format/tag-record.ts';
import { MAX_OPEN_SUBREQUESTS, Semaphore } from './subrequests.ts';

/**
 * Writes the record to every backend of the unit's placement; fewer than tagRecordQuorum copies
 * stored is a 503 (the catalog already holds the new tags: the client's retry writes them again).
 */
export async function writeTagRecord(byId: Map<string, Backend>, unit: CodedUnit, record: TagRecord, dek?: DataKey): Promise<void> {
  const bytes = await encodeTagRecord(record, dek);
  const key = tagRecordKey(record.bucket, unit.unitId);
  const slots = new Semaphore(MAX_OPEN_SUBREQUESTS); // a wide code has more backends than a Worker may have open
  const results = await Promise.allSettled(
    unit.placement.map((id) =>
      slots.run(async () => {
        const backend = byId.get(id);
        if (!backend) throw new Error(`backend ${id} is not configured`);
        await backend.put(key, bytes, bytes.length);
      }),
    ),
  );
  const stored = results.filter((r) => r.status === 'fulfilled').length;
  if (stored < tagRecordQuorum(unit)) {
    throw new S3Error(
      'ServiceUnavailable',
      `The tags were set but stored beside the object's data on only ${stored} of ${unit.placement.length} backends; send the request again.`,
    );
  }
}

/** The newest copy of the unit's record on `backends` (each asked once), or null when no readable copy exists. */
export async function readTagRecord(backends: Backend[], bucket: string, unitId: string, dek?: DataKey): Promise<TagRecord | null> {
  const key = tagRecordKey(bucket, unitId);
  const slots = new Semaphore(MAX_OPEN_SUBREQUESTS);
  const copies = await Promise.all(
    backends.map((b) =>
      slots.run(async () => {
        try {
          const { body } = await b.get(key);
          const record = await decodeTagRecord(new Uint8Array(await new Response(body).arrayBuffer()), dek);
          return record && record.bucket === bucket && record.unitId === unitId ? record : null;
        } catch {
          return null; // missing (NotFound), or this copy unreadable now: the others decide
        }
      }),
    ),
  );
  return copies.reduce<TagRecord | null>((newest, r) => (r && (!newest || r.setAt > newest.setAt) ? r : newest), null);
}
