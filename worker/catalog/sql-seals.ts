/**
 * Key rotation's view of one bucket's catalog (format/seal.ts): every record that may hold a
 * wrapped data key — each stored version's manifest and each uploaded part of an open multipart
 * upload — paged in a stable order, and replaced only if unchanged since it was read
 * (compare-and-set on the JSON), so a rotation never undoes a concurrent tag change or upload.
 * The catalog never sees a key: the worker unwraps and re-wraps, the catalog swaps JSON.
 */
import type { SealRecord, SealRecordCursor } from './types.ts';

/**
 * Up to `limit` records after `after` (null: from the start): versions in (key, version id)
 * order, then parts in (upload id, part number) order.
 */
export function listSealRecords(sql: SqlStorage, after: SealRecordCursor | null, limit: number): SealRecord[] {
  const out: SealRecord[] = [];
  if (!after || after.kind === 'version') {
    const rows = sql
      .exec<{ key: string; version_id: string; manifest: string }>(
        after
          ? 'SELECT key, version_id, manifest FROM versions WHERE delete_marker = 0 AND (key > ? OR (key = ? AND version_id > ?)) ORDER BY key, version_id LIMIT ?'
          : 'SELECT key, version_id, manifest FROM versions WHERE delete_marker = 0 ORDER BY key, version_id LIMIT ?',
        ...(after ? [after.a, after.a, after.b, limit] : [limit]),
      )
      .toArray();
    for (const r of rows) out.push({ at: { kind: 'version', a: r.key, b: r.version_id }, json: r.manifest });
    if (out.length >= limit) return out;
  }
  const from = after?.kind === 'part' ? after : null;
  const rows = sql
    .exec<{ upload_id: string; part_number: number; record: string }>(
      from
        ? 'SELECT upload_id, part_number, record FROM parts WHERE upload_id > ? OR (upload_id = ? AND part_number > ?) ORDER BY upload_id, part_number LIMIT ?'
        : 'SELECT upload_id, part_number, record FROM parts ORDER BY upload_id, part_number LIMIT ?',
      ...(from ? [from.a, from.a, Number(from.b), limit - out.length] : [limit - out.length]),
    )
    .toArray();
  for (const r of rows) out.push({ at: { kind: 'part', a: r.upload_id, b: String(r.part_number) }, json: r.record });
  return out;
}

/** Replaces each record whose JSON is still `before` by `after`; returns how many were replaced. */
export function replaceSealRecords(sql: SqlStorage, items: { at: SealRecordCursor; before: string; after: string }[]): number {
  let replaced = 0;
  for (const { at, before, after } of items) {
    const cursor =
      at.kind === 'version'
        ? sql.exec('UPDATE versions SET manifest = ? WHERE key = ? AND version_id = ? AND manifest = ?', after, at.a, at.b, before)
        : sql.exec('UPDATE parts SET record = ? WHERE upload_id = ? AND part_number = ? AND record = ?', after, at.a, Number(at.b), before);
    replaced += cursor.rowsWritten > 0 ? 1 : 0;
  }
  return replaced;
}
