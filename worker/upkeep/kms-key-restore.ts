/**
 * The named KMS keys' table (catalog/sql-kms-keys.ts) back from the catalog journal, after the
 * bucket list's catalog instance was lost: its state rows `kms-key/<id>` are journaled with the
 * bucket list (sql-journal.ts), so the bucket list's segments on the backends hold every key as it
 * was last journaled, its versions' material wrapped under the gateway's keys. A key the live
 * table lacks is put back as the journal had it; one it has is kept as it is (the live record is
 * newer than any journal of it). Run before the buckets' rebuild (admin `rebuild` does), whose
 * SSE-KMS shard headers open only with the keys' material.
 */
import type { Backend } from '../../backends/types.ts';
import { replayJournal } from '../catalog/journal-replay.ts';
import type { KmsKeyCatalog } from '../catalog/ports.ts';
import { BUCKET_LIST_INSTANCE } from '../format/journal.ts';
import type { KeyRing } from '../format/seal.ts';
import { readJournalSegments } from './journal-restore.ts';

const ROW = 'kms-key/';

export interface KmsKeyRestore {
  /** Bucket list segments found and read. */
  segments: number;
  /** Keys put back from the journal, and keys the live table already had. */
  restored: string[];
  kept: string[];
  unreadable: { id: string; reason: string }[];
}

export async function restoreKmsKeys(backends: Backend[], catalog: KmsKeyCatalog, ring?: KeyRing): Promise<KmsKeyRestore> {
  const read = await readJournalSegments((instance) => instance === BUCKET_LIST_INSTANCE, backends, ring);
  const out: KmsKeyRestore = { segments: read.segments.length, restored: [], kept: [], unreadable: read.unreadable };
  const image = replayJournal(read.segments.map((s) => s.segment)).get(BUCKET_LIST_INSTANCE);
  for (const row of image?.tables.get('state')?.values() ?? []) {
    const name = String(row.name);
    if (!name.startsWith(ROW)) continue;
    const id = name.slice(ROW.length);
    if (await catalog.replaceKmsKey(id, null, String(row.value))) out.restored.push(id);
    else out.kept.push(id);
  }
  return out;
}
