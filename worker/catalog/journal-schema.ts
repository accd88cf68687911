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
};

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
  event_outbox: 'bucket events waiting for delivery (sql-outbox.ts): a rebuilt catalog restores the changes, not their undelivered events',
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
  return table === 'state' ? `${row}name NOT IN (${TRANSIENT_STATE.map((n) => `'${n}'`).join(', ')})` : null;
}

export const keyArray = (table: string, row: string) => `json_array(${JOURNALED[table]!.map((c) => `${row}.${c}`).join(', ')})`;

function triggers(table: string): string {
  const note = (row: string) => `INSERT OR REPLACE INTO journal_changes (tbl, pk) VALUES ('${table}', ${keyArray(table, row)});`;
  const when = (row: string) => {
    const f = rowFilter(table, `${row}.`);
    return f ? ` WHEN ${f}` : '';
  };
  return `
CREATE TRIGGER IF NOT EXISTS journal_${table}_insert AFTER INSERT ON ${table}${when('NEW')} BEGIN ${note('NEW')} END;
CREATE TRIGGER IF NOT EXISTS journal_${table}_delete AFTER DELETE ON ${table}${when('OLD')} BEGIN ${note('OLD')} END;
CREATE TRIGGER IF NOT EXISTS journal_${table}_update AFTER UPDATE ON ${table}${when('NEW')} BEGIN ${note('OLD')} ${note('NEW')} END;`;
}

/** The journal's tables and the triggers of every journaled table (after those tables exist). */
export const JOURNAL_SCHEMA =
  `
CREATE TABLE IF NOT EXISTS journal_changes (id INTEGER PRIMARY KEY AUTOINCREMENT, tbl TEXT NOT NULL, pk TEXT NOT NULL, UNIQUE (tbl, pk));
CREATE TABLE IF NOT EXISTS journal_files (segment INTEGER PRIMARY KEY, generation INTEGER NOT NULL, units TEXT NOT NULL, taken_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS journal_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
` + Object.keys(JOURNALED).map(triggers).join('\n');
