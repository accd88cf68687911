/**
 * The key table of named KMS keys (model/kms-key.ts): state rows `kms-key/<id>` of the bucket
 * list's instance, one JSON record per key. The state table is journaled (sql-journal.ts), so the
 * bucket list's journal on the backends carries the table too (wrapped material only: the
 * gateway's own keys, which never reach the catalog, are needed to open it). A change is a
 * compare-and-set on the record's JSON, so two isolates creating, disabling or rotating one key
 * at once never undo each other: the loser reads again.
 */
import { readState, writeState } from './sql-state.ts';

const PREFIX = 'kms-key/';

/** Every key's record (JSON), in id order. */
export function listKmsKeys(sql: SqlStorage): string[] {
  return sql
    .exec<{ value: string }>('SELECT value FROM state WHERE name >= ? AND name < ? ORDER BY name', PREFIX, `${PREFIX}\uffff`)
    .toArray()
    .map((r) => r.value);
}

export function readKmsKey(sql: SqlStorage, id: string): string | null {
  return readState(sql, PREFIX + id);
}

/** Writes `after` if the record is still `before` (null: absent); whether it did. */
export function replaceKmsKey(sql: SqlStorage, id: string, before: string | null, after: string): boolean {
  if (readState(sql, PREFIX + id) !== before) return false;
  writeState(sql, PREFIX + id, after);
  return true;
}
