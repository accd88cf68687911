/**
 * The rows of a journaled table that the journal records, as a catalog instance holds them now
 * (journal-schema.ts's filter: no transient state row, only undelivered events), in primary key
 * order; none for a table made on first use (LAZY_TABLES) that this instance never made.
 */
import { JOURNALED, rowFilter } from '../../worker/catalog/journal-schema.ts';

export function journaledRows(sql: SqlStorage, table: string): Record<string, SqlStorageValue>[] {
  if (!sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", table).toArray().length) return [];
  const filter = rowFilter(table, '');
  return sql
    .exec<Record<string, SqlStorageValue>>(`SELECT * FROM ${table}${filter ? ` WHERE ${filter}` : ''} ORDER BY ${JOURNALED[table]!.join(', ')}`)
    .toArray();
}
