/**
 * What the catalog journal records (docs/FORMAT.md, "Catalog journal"): the journaled tables and
 * their keys, the tables and state rows left out and why, and the triggers that note every
 * change of a journaled row. A leaf: the schema's migrations make these without importing the
 * journal's reader and writer (sql-journal.ts).
 */

/** Journaled tables and their primary key columns, in dump order. */
export const JOURNALED: Readonly<Record<string, readonly string[]>> = {
  buckets: ['name'],
  state: ['name'],
  objects: ['key'],
  versions: ['key', 'version_id'],
  uploads: ['upload_id'],
  parts: ['upload_id', 'part_number'],
  garbage: ['id'],
  // Only its undelivered rows (rowFilter): a rebuilt catalog delivers the events it had not yet,
  // as its objects come back (at least once: the receiver de-duplicates by event id).
  event_outbox: ['id'],
};

/**
 * Journaled tables made on first use, not with the schema (sql-outbox.ts makes the outbox's):
 * their triggers are made with them (journalTriggers), and the journal reads them only if they exist.
 */
export const LAZY_TABLES: readonly string[] = ['event_outbox'];

/** Tables left out of the journal, and why (rebuilt without it, or the journal's own). */
export const NOT_JOURNALED: Readonly<Record<string, string>> = {
  // Derived rows: journaling them would multiply the rows every PUT writes for nothing.
  ledger: "counts kept from the versions' manifests: a rebuilt catalog counts them again",
  units: "the index of the versions' manifests' units: a rebuilt catalog indexes them again (the scrubber's check times start afresh)",
  degraded_units: 'the repair worklist: the scrubber and reads find the damage again on the backends',
  reservations: 'writes in flight: a write not committed when the catalog is lost is not an object',
  completed_uploads: 'answers to retried CompleteMultipartUpload requests, kept for minutes',
  journal_changes: "the journal's own work list",
  journal_files: "the journal's own record of its segments",
  journal_meta: "the journal's own progress",
  access_log: 'server access log records waiting minutes for delivery: a rebuilt catalog loses at most those not yet delivered',
  access_log_batches: 'claims of access log batches being delivered (they go with their records)',
  event_destinations: "event delivery counts and backoff per destination: a rebuilt catalog's start at zero",
  event_sequencer: "the partition's event counter: never below the clock, so it needs no journal",
};

/**
 * State rows that are progress of upkeep work, not the bucket's state: they change on every
 * cron run, and a rebuilt catalog starts that work afresh.
 */
export const TRANSIENT_STATE = [
  'schema-version',
  'sse-c-etags',
  'scrub-cursor',
  'scrub-position',
  'scrub-progress',
  'repair-failures',
  'repair-last-send',
  'lifecycle-progress',
  'drain',
  'key-rotation',
];

/** Rows of a journaled table that are journaled (`row` is the trigger's NEW or OLD, or '' in a query). */
export function rowFilter(table: string, row: string): string | null {
  if (table === 'state') return `${row}name NOT IN (${TRANSIENT_STATE.map((n) => `'${n}'`).join(', ')})`;
  // A delivered or dead-lettered event leaves the journal as if deleted.
  if (table === 'event_outbox') return `${row}state = 'queued'`;
  return null;
}

export const keyArray = (table: string, row: string) => `json_array(${JOURNALED[table]!.map((c) => `${row}.${c}`).join(', ')})`;

/**
 * The triggers that note every change of a journaled row of `table`. An event's update is noted
 * when the row was or is journaled: an event leaving the filter (delivered) is recorded as deleted.
 */
export function journalTriggers(table: string): string {
  const note = (row: string) => `INSERT OR REPLACE INTO journal_changes (tbl, pk) VALUES ('${table}', ${keyArray(table, row)});`;
  const filter = (row: string) => rowFilter(table, `${row}.`);
  const when = (row: string) => {
    const f = filter(row);
    return f ? ` WHEN ${f}` : '';
  };
  // (A state row's name never changes: its filter is the same before and after, as written since schema 1.)
  const updated = table === 'event_outbox' ? ` WHEN (${filter('OLD')}) OR (${filter('NEW')})` : when('NEW');
  return `
CREATE TRIGGER IF NOT EXISTS journal_${table}_insert AFTER INSERT ON ${table}${when('NEW')} BEGIN ${note('NEW')} END;
CREATE TRIGGER IF NOT EXISTS journal_${table}_delete AFTER DELETE ON ${table}${when('OLD')} BEGIN ${note('OLD')} END;
CREATE TRIGGER IF NOT EXISTS journal_${table}_update AFTER UPDATE ON ${table}${updated} BEGIN ${note('OLD')} ${note('NEW')} END;`;
}

/** The journal's tables and the triggers of every journaled table (after those tables exist). */
export const JOURNAL_SCHEMA =
  `
CREATE TABLE IF NOT EXISTS journal_changes (id INTEGER PRIMARY KEY AUTOINCREMENT, tbl TEXT NOT NULL, pk TEXT NOT NULL, UNIQUE (tbl, pk));
CREATE TABLE IF NOT EXISTS journal_files (segment INTEGER PRIMARY KEY, generation INTEGER NOT NULL, units TEXT NOT NULL, taken_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS journal_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
` +
  Object.keys(JOURNALED)
    .filter((t) => !LAZY_TABLES.includes(t))
    .map(journalTriggers)
    .join('\n');
