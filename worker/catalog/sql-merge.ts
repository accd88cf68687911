/**
 * The rows a merge moves (docs/PARTITIONS.md "Merges"), as SQL over one CatalogObject's storage.
 * A merge is a split run the other way: the upper partition Q sends every key's rows to its lower
 * neighbour P with the split's pages, change log and fence (sql-split.ts). Unlike a split's new
 * partition, P serves its own range all along, and its listings, sums, ledger and upkeep must
 * see that range only; so what arrives waits in staging tables, outside P's own, and is applied
 * in the one transaction that widens P's range. Q's garbage (units superseded by its commits)
 * goes over the same way. Synchronous: called inside the caller's transaction.
 */
import type { SqlLedger } from './sql-ledger.ts';
import { replaceKeys, type KeyRows } from './sql-split.ts';
import { readState, writeState } from './sql-state.ts';

/** State row of Q while it merges into P (JSON MergeState). */
const MERGE_OUT = 'partition-merge';
/** State row of P while Q merges into it (JSON MergeInState). */
const MERGE_IN = 'partition-merge-in';

export interface MergeState {
  bucket: string;
  /** P: its instance and the low of its range (Q's low is P's high). */
  into: string;
  intoLow: string;
  /** Q's own instance name (as the map names it). */
  self: string;
  /** Q's range: what moves. */
  low: string;
  high: string | null;
  /** The last key copied by the page walk (null: none yet). */
  copied: string | null;
  /** 'copying': Q owns its range and writes; 'committing': P holds everything, the merge only goes forward. */
  phase: 'copying' | 'committing';
  started: number;
}

export interface MergeInState {
  bucket: string;
  /** Q's instance and range. */
  from: string;
  low: string;
  high: string | null;
  /** 'staging': rows arrive, Q may still give up; 'committing': Q's rows are all here, the root may commit at any moment. */
  phase: 'staging' | 'committing';
}

export function readMerge(sql: SqlStorage): MergeState | null {
  const row = readState(sql, MERGE_OUT);
  return row === null ? null : (JSON.parse(row) as MergeState);
}

export function writeMerge(sql: SqlStorage, state: MergeState | null): void {
  writeState(sql, MERGE_OUT, state === null ? null : JSON.stringify(state));
}

export function readMergeIn(sql: SqlStorage): MergeInState | null {
  const row = readState(sql, MERGE_IN);
  return row === null ? null : (JSON.parse(row) as MergeInState);
}

/** P: staging starts empty for `state` (a merge given up earlier leaves nothing behind). */
export function startStaging(sql: SqlStorage, state: MergeInState): void {
  sql.exec('CREATE TABLE IF NOT EXISTS merge_staged (key TEXT PRIMARY KEY, rows TEXT NOT NULL) WITHOUT ROWID');
  sql.exec('CREATE TABLE IF NOT EXISTS merge_garbage (id INTEGER PRIMARY KEY, not_before INTEGER NOT NULL, entry TEXT NOT NULL)');
  sql.exec('DELETE FROM merge_staged');
  sql.exec('DELETE FROM merge_garbage');
  writeState(sql, MERGE_IN, JSON.stringify(state));
}

export function writeMergeIn(sql: SqlStorage, state: MergeInState): void {
  writeState(sql, MERGE_IN, JSON.stringify(state));
}

/** P: the staging tables and state gone (applied, or the merge given up). */
export function dropStaging(sql: SqlStorage): void {
  sql.exec('DROP TABLE IF EXISTS merge_staged');
  sql.exec('DROP TABLE IF EXISTS merge_garbage');
  writeState(sql, MERGE_IN, null);
}

/** P: each key's rows as Q has them now replace what was staged of it (none: Q holds nothing of it now). */
export function stageKeys(sql: SqlStorage, batch: KeyRows[]): void {
  // Rows hold text, integers and nulls only (sql-schema.ts has no BLOB column): JSON keeps them.
  for (const { key, rows } of batch) sql.exec('INSERT OR REPLACE INTO merge_staged (key, rows) VALUES (?, ?)', key, JSON.stringify(rows));
}

/** A row of Q's garbage, by its id there (a page sent twice is staged once). */
export interface GarbageRowOut {
  id: number;
  not_before: number;
  entry: string;
}

export function stageGarbage(sql: SqlStorage, rows: GarbageRowOut[]): void {
  for (const r of rows) sql.exec('INSERT OR REPLACE INTO merge_garbage (id, not_before, entry) VALUES (?, ?, ?)', r.id, r.not_before, r.entry);
}

/** Q: up to `limit` garbage rows after id `after`. */
export function garbageAfter(sql: SqlStorage, after: number, limit: number): GarbageRowOut[] {
  return sql
    .exec<{ id: number; not_before: number; entry: string }>('SELECT id, not_before, entry FROM garbage WHERE id > ? ORDER BY id LIMIT ?', after, limit)
    .toArray();
}

/** P: every staged key's rows into its tables (the ledger counts them) and the staged garbage into its own; answers the keys applied. */
export function applyStaged(sql: SqlStorage, ledger: SqlLedger): number {
  let n = 0;
  for (let after = ''; ; ) {
    const page = sql.exec<{ key: string; rows: string }>('SELECT key, rows FROM merge_staged WHERE key > ? ORDER BY key LIMIT 500', after).toArray();
    if (!page.length) break;
    replaceKeys(
      sql,
      ledger,
      page.map((p) => ({ key: p.key, rows: JSON.parse(p.rows) as KeyRows['rows'] })),
    );
    n += page.length;
    after = page.at(-1)!.key;
  }
  sql.exec('INSERT INTO garbage (not_before, entry) SELECT not_before, entry FROM merge_garbage ORDER BY id');
  dropStaging(sql);
  return n;
}
