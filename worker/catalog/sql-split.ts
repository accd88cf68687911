/**
 * The rows an on-line split moves (docs/PARTITIONS.md "Splits on line"), as SQL over one
 * CatalogObject's storage. The partition splitting (P) copies every row of the keys at or above
 * the split key to the new partition (Q) in pages while it goes on writing; a change log kept by
 * triggers names the keys P changed meanwhile, whose rows are copied again (a key's rows are
 * always replaced whole, so a page and a catch-up may cross in any order). After the root
 * committed the new map, P drops the upper half. Everything of one key moves together: its
 * versions, current row, units, repair worklist rows, uploads with their parts, reservations of
 * writes in flight (schema 7 keeps their key) and remembered completions. The ledger's counts
 * follow the rows (usage.ts), in Q as rows arrive and in P as they go, so each partition's
 * health stays its rows' sum. Synchronous: called inside the caller's transaction.
 */
import type { ObjectManifest } from '../format/manifest.ts';
import type { SqlLedger } from './sql-ledger.ts';
import type { QuotaFigures } from './quota.ts';

export type { PartitionShare, PartitionStats, SplitStop } from './types.ts';
import { readState, writeState } from './sql-state.ts';

/** State row of P while it splits (JSON SplitState). */
const SPLIT_STATE = 'partition-split';
/** State row the change log's triggers read: the split key, as a plain string. */
const SPLIT_AT = 'partition-split-at';

export interface SplitState {
  bucket: string;
  /** The first key of the upper half (Q's low). */
  at: string;
  /** P's range when the split started: Q owns [at, high). */
  low: string;
  high: string | null;
  /** Q's instance name and the settings copy generation it was made with. */
  to: string;
  /** The last key copied by the page walk (null: none yet). */
  copied: string | null;
  /** 'copying': P owns everything and writes; 'committing': upper-half calls wait, the split only goes forward. */
  phase: 'copying' | 'committing';
  started: number;
}

/** What the root commits: the range starting at `low` (up to `high`) splits at `at`, the upper part to `to`. */
export interface SplitChange {
  low: string;
  at: string;
  high: string | null;
  to: string;
  /** The quota's figures (quota.ts) of the splitting partition before the split, and of what moved. */
  quota?: { used: QuotaFigures; moved: QuotaFigures };
}

export function readSplit(sql: SqlStorage): SplitState | null {
  const row = readState(sql, SPLIT_STATE);
  return row === null ? null : (JSON.parse(row) as SplitState);
}

export function writeSplit(sql: SqlStorage, state: SplitState | null): void {
  writeState(sql, SPLIT_STATE, state === null ? null : JSON.stringify(state));
}

/** Tables whose rows carry their key in `key`. */
const KEYED = ['versions', 'objects', 'units', 'degraded_units', 'uploads', 'reservations'] as const;

/** One key's rows, table by table (each row as SQLite answers it). */
export interface KeyRows {
  key: string;
  rows: { t: string; r: Record<string, SqlStorageValue> }[];
}

const upper = `(SELECT value FROM state WHERE name = '${SPLIT_AT}')`;

/**
 * Starts logging the keys at or above `at` that any row change touches (the log survives a
 * restart: triggers are stored). Idempotent.
 */
export function startChangeLog(sql: SqlStorage, at: string): void {
  writeState(sql, SPLIT_AT, at);
  // `seq` tells a change logged again while its key was being sent from the one that was sent (ackChanges).
  sql.exec('CREATE TABLE IF NOT EXISTS split_changes (key TEXT PRIMARY KEY, seq INTEGER NOT NULL) WITHOUT ROWID');
  // Each logged change takes MAX(seq) + 1: an index keeps that a lookup, not a scan of the log.
  sql.exec('CREATE INDEX IF NOT EXISTS split_changes_by_seq ON split_changes (seq)');
  const log = (table: string, keyOf: (row: string) => string) => {
    for (const [event, row] of [
      ['INSERT', 'NEW'],
      ['UPDATE', 'NEW'],
      ['DELETE', 'OLD'],
    ] as const) {
      sql.exec(
        `CREATE TRIGGER IF NOT EXISTS split_${table}_${event.toLowerCase()} AFTER ${event} ON ${table} BEGIN ` +
          `INSERT OR REPLACE INTO split_changes (key, seq) SELECT k, (SELECT COALESCE(MAX(seq), 0) + 1 FROM split_changes) ` +
          `FROM (SELECT ${keyOf(row)} AS k) WHERE k >= ${upper}; END`,
      );
    }
  };
  for (const table of KEYED) log(table, (row) => `${row}.key`);
  log('parts', (row) => `(SELECT key FROM uploads WHERE upload_id = ${row}.upload_id)`);
  log('completed_uploads', (row) => `json_extract(${row}.result, '$.key')`);
}

/** Ends the log (the split committed or was given up). */
export function stopChangeLog(sql: SqlStorage): void {
  for (const table of [...KEYED, 'parts', 'completed_uploads']) {
    for (const event of ['insert', 'update', 'delete']) sql.exec(`DROP TRIGGER IF EXISTS split_${table}_${event}`);
  }
  sql.exec('DROP TABLE IF EXISTS split_changes');
  writeState(sql, SPLIT_AT, null);
}

/** A logged change: the key, and the log's sequence number when it was last changed. */
export interface Change {
  key: string;
  seq: number;
}

/** Up to `limit` logged changes, in key order (left in the log until ackChanges). */
export function peekChanges(sql: SqlStorage, limit: number): Change[] {
  return sql.exec<{ key: string; seq: number }>('SELECT key, seq FROM split_changes ORDER BY key LIMIT ?', limit).toArray();
}

/** The changes were copied: cleared, except a key changed again since (its seq moved on). */
export function ackChanges(sql: SqlStorage, changes: Change[]): void {
  for (const c of changes) sql.exec('DELETE FROM split_changes WHERE key = ? AND seq = ?', c.key, c.seq);
}

export function pendingChanges(sql: SqlStorage): number {
  return sql.exec<{ n: number }>('SELECT COUNT(*) AS n FROM split_changes').one().n;
}

/** Up to `limit` keys holding rows in [from, high), after `after` (exclusive; null: from `from` on), in key order. */
export function keysAfter(sql: SqlStorage, from: string, high: string | null, after: string | null, limit: number): string[] {
  const lowOp = after === null ? '>=' : '>';
  const low = after ?? from;
  const bound = high === null ? '' : ' AND key < ?';
  const args = high === null ? [low] : [low, high];
  const member = (t: string) => `SELECT key FROM ${t} WHERE key ${lowOp} ?${bound}${t === 'reservations' ? ' AND key IS NOT NULL' : ''}`;
  const query = `SELECT key FROM (${['versions', 'uploads', 'reservations', 'degraded_units'].map(member).join(' UNION ')}) ORDER BY key LIMIT ?`;
  return sql
    .exec<{ key: string }>(query, ...args, ...args, ...args, ...args, limit)
    .toArray()
    .map((r) => r.key);
}

/**
 * Every row of the first of `keys`, in order, until their rows pass `maxBytes` (at least the
 * first key's, whatever its size); none for a key that holds nothing now (Q then drops what it
 * has of it). The caller goes on after the last key answered.
 */
export function rowsOfKeys(sql: SqlStorage, keys: string[], maxBytes = Number.POSITIVE_INFINITY): KeyRows[] {
  const out: KeyRows[] = [];
  let bytes = 0;
  for (const key of keys) {
    if (out.length > 0 && bytes >= maxBytes) break;
    const rows: KeyRows['rows'] = [];
    for (const t of KEYED) for (const r of sql.exec(`SELECT * FROM ${t} WHERE key = ?`, key)) rows.push({ t, r });
    for (const r of sql.exec('SELECT p.* FROM parts p JOIN uploads u ON u.upload_id = p.upload_id WHERE u.key = ?', key)) rows.push({ t: 'parts', r });
    for (const r of sql.exec("SELECT * FROM completed_uploads WHERE json_extract(result, '$.key') = ?", key)) rows.push({ t: 'completed_uploads', r });
    for (const { r } of rows) for (const v of Object.values(r)) bytes += typeof v === 'string' ? v.length : 8;
    out.push({ key, rows });
  }
  return out;
}

/** Deletes every row of `key`, its stored versions taken off the ledger. */
function dropKey(sql: SqlStorage, ledger: SqlLedger, key: string): void {
  for (const v of sql.exec<{ manifest: string }>('SELECT manifest FROM versions WHERE key = ? AND delete_marker = 0', key).toArray()) {
    ledger.replace(key, JSON.parse(v.manifest) as ObjectManifest, null);
  }
  sql.exec('DELETE FROM parts WHERE upload_id IN (SELECT upload_id FROM uploads WHERE key = ?)', key);
  sql.exec("DELETE FROM completed_uploads WHERE json_extract(result, '$.key') = ?", key);
  for (const t of KEYED) sql.exec(`DELETE FROM ${t} WHERE key = ?`, key);
}

/** Q: each key's rows replaced by those given (the ledger counts what arrives; repair rows keep their progress). */
export function replaceKeys(sql: SqlStorage, ledger: SqlLedger, batch: KeyRows[]): void {
  for (const { key, rows } of batch) {
    dropKey(sql, ledger, key);
    const ordered = [...rows].sort((a, b) => ORDER.indexOf(a.t) - ORDER.indexOf(b.t));
    for (const { t, r } of ordered) {
      if (!ORDER.includes(t)) throw new Error(`split: table ${t} is not moved`);
      if (t !== 'degraded_units') insertRow(sql, t, r); // repair rows below: after the ledger's own
    }
    for (const { t, r } of ordered)
      if (t === 'versions' && Number(r.delete_marker) !== 1) ledger.replace(key, null, JSON.parse(String(r.manifest)) as ObjectManifest);
    sql.exec('DELETE FROM degraded_units WHERE key = ?', key); // the ledger wrote them afresh: the copies keep attempts and backoff
    for (const { t, r } of ordered) if (t === 'degraded_units') insertRow(sql, t, r);
  }
}

function insertRow(sql: SqlStorage, table: string, r: Record<string, SqlStorageValue>): void {
  const columns = Object.keys(r);
  sql.exec(`INSERT OR REPLACE INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`, ...columns.map((c) => r[c]!));
}

const ORDER = ['versions', 'objects', 'units', 'uploads', 'parts', 'reservations', 'completed_uploads', 'degraded_units'];

/** P after the commit: every row of the keys in [at, high) dropped, off the ledger. Answers how many keys. */
export function dropRange(sql: SqlStorage, ledger: SqlLedger, at: string, high: string | null): number {
  let n = 0;
  for (let keys = keysAfter(sql, at, high, null, 500); keys.length; keys = keysAfter(sql, at, high, keys.at(-1)!, 500)) {
    for (const key of keys) dropKey(sql, ledger, key);
    n += keys.length;
  }
  // Completions remembered for keys whose uploads are gone (they hold no other row).
  const above = high === null ? "json_extract(result, '$.key') >= ?" : "json_extract(result, '$.key') >= ? AND json_extract(result, '$.key') < ?";
  sql.exec(`DELETE FROM completed_uploads WHERE ${above}`, ...(high === null ? [at] : [at, high]));
  return n;
}

/** Reservations written before schema 7 (no key): a split waits until they are committed or expired. */
export function unkeyedReservations(sql: SqlStorage): number {
  return sql.exec<{ n: number }>('SELECT COUNT(*) AS n FROM reservations WHERE key IS NULL').one().n;
}

/** The median key of the versions in [low, high) (null: fewer than 2 keys). */
export function medianKey(sql: SqlStorage, low: string, high: string | null): string | null {
  const bound = high === null ? '' : ' AND key < ?';
  const args = high === null ? [low] : [low, high];
  const n = sql.exec<{ n: number }>(`SELECT COUNT(DISTINCT key) AS n FROM versions WHERE key >= ?${bound}`, ...args).one().n;
  if (n < 2) return null;
  return sql.exec<{ key: string }>(`SELECT DISTINCT key FROM versions WHERE key >= ?${bound} ORDER BY key LIMIT 1 OFFSET ?`, ...args, Math.floor(n / 2)).one()
    .key;
}
