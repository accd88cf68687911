/**
 * The catalog-loss record (upkeep/catalog-loss.ts says how it is found): journal instances whose
 * segments on the backends this catalog does not know. Kept in the bucket list's instance, in
 * the journal's own table (journal_meta, never journaled: it describes the journal, it is not
 * catalog state a rebuild should bring back), so a restart or another isolate sees it.
 */
import type { CatalogLoss } from './types.ts';

const ROW = 'catalog-loss';

export const NO_CATALOG_LOSS: CatalogLoss = { lost: {}, suspect: {} };

export function readCatalogLoss(sql: SqlStorage): CatalogLoss {
  const row = sql.exec<{ value: string }>('SELECT value FROM journal_meta WHERE name = ?', ROW).toArray()[0];
  return row ? { ...NO_CATALOG_LOSS, ...(JSON.parse(row.value) as CatalogLoss) } : { lost: {}, suspect: {} };
}

export function writeCatalogLoss(sql: SqlStorage, loss: CatalogLoss): void {
  if (!Object.keys(loss.lost).length && !Object.keys(loss.suspect).length) sql.exec('DELETE FROM journal_meta WHERE name = ?', ROW);
  else sql.exec('INSERT OR REPLACE INTO journal_meta (name, value) VALUES (?, ?)', ROW, JSON.stringify(loss));
}
