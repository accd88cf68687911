/**
 * The catalog journal's side in SQLite (format/journal.ts says what is stored; upkeep/journal.ts
 * writes it to the backends). Triggers on every journaled table record which rows changed
 * (`journal_changes`, one row per changed catalog row, its id renewed on each change), so no
 * writer anywhere in the catalog has to remember the journal, and a table added later is
 * journaled by adding it to JOURNALED (a test fails while a table is in neither list).
 *
 * A take reads what is due into one segment: first the next rows of the generation's dump (a
 * cursor over the journaled tables in key order), then the oldest changes, each with the row as
 * it is now. Nothing advances until the segment is acknowledged written (`written`): a write
 * that fails is simply taken again, under a new segment number. A change made after a take
 * renews its id, so the acknowledgement never drops a change the segment did not hold.
 */
import type { CodedUnit, ObjectManifest } from '../format/manifest.ts';
import { unitsOf } from './rules.ts';
import { JOURNAL_BUCKET, JOURNAL_FORMAT, type JournalRecord, type JournalValue } from '../format/journal.ts';
import { queueGarbage } from './sql-objects.ts';
import { createOutboxTables, restoreEvent } from './sql-outbox.ts';
import { SCHEMA_VERSION } from './sql-schema.ts';
import type { DumpCursor, GarbageUnits, JournalImportBatch, JournalKnown, JournalMeta, JournalRedundancy, JournalStatus, JournalTake } from './types.ts';
import { JOURNALED, LAZY_TABLES, TRANSIENT_STATE, rowFilter } from './journal-schema.ts';

export type { DumpCursor, JournalMeta, JournalStatus, JournalTake };
export { JOURNALED, NOT_JOURNALED, TRANSIENT_STATE } from './journal-schema.ts';

const FRESH: JournalMeta = {
  segment: 0,
  generation: 1,
  generationFirst: 1,
  dump: { table: 0, after: null },
  segmentsInGeneration: 0,
  recordsInGeneration: 0,
  dumpedRows: 0,
  acked: 0,
  ackedTakenAt: null,
  complete: null,
};

/** A generation ends (a new dump starts) once its changes outweigh its dump, after at least this many segments. */
export const GENERATION_MIN_SEGMENTS = 16;

export class SqlJournal {
  constructor(
    private readonly sql: SqlStorage,
    /** BUCKET_LIST_INSTANCE or the bucket's name (format/journal.ts). */
    private readonly instance: string,
  ) {}

  meta(): JournalMeta {
    const row = this.sql.exec<{ value: string }>("SELECT value FROM journal_meta WHERE name = 'journal'").toArray()[0];
    return row ? (JSON.parse(row.value) as JournalMeta) : { ...FRESH };
  }

  private save(meta: JournalMeta): void {
    this.sql.exec("INSERT OR REPLACE INTO journal_meta (name, value) VALUES ('journal', ?)", JSON.stringify(meta));
  }

  /**
   * The next segment: up to about `maxBytes` of records (at least one), dump rows first; null
   * when nothing is due. Starts a new generation when the current one's changes outweigh its dump.
   */
  take(now: number, maxBytes: number): JournalTake | null {
    const meta = this.meta();
    if (!meta.dump && meta.segmentsInGeneration >= GENERATION_MIN_SEGMENTS && meta.recordsInGeneration >= 2 * meta.dumpedRows) {
      Object.assign(meta, {
        generation: meta.generation + 1,
        generationFirst: meta.segment + 1,
        dump: { table: 0, after: null },
        segmentsInGeneration: 0,
        recordsInGeneration: 0,
        dumpedRows: 0,
      });
    }
    const records: JournalRecord[] = [];
    let bytes = 0;
    const full = () => records.length > 0 && bytes >= maxBytes;
    const add = (r: JournalRecord) => {
      records.push(r);
      bytes += JSON.stringify(r).length;
    };

    let dumpAfter: JournalTake['dumpAfter'] = null;
    let dumped = 0;
    if (meta.dump) {
      let cursor: DumpCursor = meta.dump;
      const tables = Object.keys(JOURNALED);
      while (!full() && cursor.table < tables.length) {
        const table = tables[cursor.table]!;
        const rows = this.dumpRows(table, cursor.after, 256);
        for (const row of rows) {
          if (full()) break;
          const k = JOURNALED[table]!.map((c) => row[c] as JournalValue);
          add({ t: table, k, r: row });
          cursor = { table: cursor.table, after: k };
        }
        if (!full() && rows.length < 256) cursor = { table: cursor.table + 1, after: null };
      }
      dumpAfter = cursor.table >= tables.length ? 'done' : cursor;
      dumped = records.length;
    }

    let upTo = 0;
    for (const change of this.sql.exec<{ id: number; tbl: string; pk: string }>('SELECT id, tbl, pk FROM journal_changes ORDER BY id').toArray()) {
      if (full()) break;
      upTo = change.id;
      const k = JSON.parse(change.pk) as JournalValue[];
      if (!JOURNALED[change.tbl]) continue; // a table no longer journaled
      const row = this.row(change.tbl, k);
      add(row ? { t: change.tbl, k, r: row } : { t: change.tbl, k });
    }
    // (A dump in progress always yields a segment: at least the one that says it is complete.)
    if (records.length === 0 && !dumpAfter) return null;
    meta.segment += 1;
    this.save(meta);
    return {
      segment: {
        format: JOURNAL_FORMAT,
        schema: SCHEMA_VERSION,
        instance: this.instance,
        segment: meta.segment,
        generation: meta.generation,
        generationFirst: meta.generationFirst,
        completes: dumpAfter === 'done',
        previous: meta.acked,
        takenAt: new Date(now).toISOString(),
        records,
      },
      upTo,
      dumpFrom: meta.dump,
      dumpAfter,
      dumped,
    };
  }

  /**
   * The segment of `take` is stored as `units`: its changes leave the work list, the dump moves
   * on, and when it completed its generation the segments of older generations go to the
   * garbage (deleted after `graceMs`, like any superseded unit).
   */
  written(take: JournalTake, units: CodedUnit[], now: number, graceMs: number): void {
    const s = take.segment;
    if (take.upTo > 0) this.sql.exec('DELETE FROM journal_changes WHERE id <= ?', take.upTo);
    this.sql.exec(
      'INSERT OR REPLACE INTO journal_files (segment, generation, units, taken_at) VALUES (?, ?, ?, ?)',
      s.segment,
      s.generation,
      JSON.stringify(units),
      Date.parse(s.takenAt),
    );
    const meta = this.meta();
    if (s.segment > meta.acked) Object.assign(meta, { acked: s.segment, ackedTakenAt: Date.parse(s.takenAt) });
    if (s.generation === meta.generation) {
      meta.segmentsInGeneration += 1;
      meta.recordsInGeneration += s.records.length;
      // The dump moves on only from where this take started it (two takes of the same rows, as
      // overlapping cron runs make, move it once).
      if (meta.dump && take.dumpAfter && JSON.stringify(take.dumpFrom) === JSON.stringify(meta.dump)) {
        meta.dumpedRows += take.dumped;
        if (take.dumpAfter === 'done') {
          meta.dump = null;
          meta.complete = { generation: s.generation, first: meta.generationFirst };
        } else meta.dump = take.dumpAfter;
      }
    }
    this.save(meta);
    if (meta.complete) {
      const old = this.sql
        .exec<{ segment: number; units: string }>('SELECT segment, units FROM journal_files WHERE segment < ?', meta.complete.first)
        .toArray();
      if (old.length) {
        queueGarbage(this.sql, { bucket: JOURNAL_BUCKET, units: old.flatMap((f) => JSON.parse(f.units) as CodedUnit[]) }, now + graceMs);
        this.sql.exec('DELETE FROM journal_files WHERE segment < ?', meta.complete.first);
      }
    }
  }

  /**
   * After an import: the journal goes on from the imported one's numbers (a new generation after
   * its newest segment, so no new segment takes an old one's key) and adopts its segment files,
   * which the new generation's completion hands to the garbage like any superseded segment.
   */
  continueAfter(from: NonNullable<JournalImportBatch['finish']>): void {
    const meta = this.meta();
    if (meta.segment >= from.newest) return;
    this.save({
      ...meta,
      segment: from.newest,
      generation: Math.max(meta.generation, from.generation) + 1,
      generationFirst: from.newest + 1,
      dump: { table: 0, after: null },
      segmentsInGeneration: 0,
      recordsInGeneration: 0,
      dumpedRows: 0,
      complete: null,
    });
    for (const f of from.files)
      this.sql.exec(
        'INSERT OR IGNORE INTO journal_files (segment, generation, units, taken_at) VALUES (?, ?, ?, ?)',
        f.segment,
        f.generation,
        JSON.stringify(f.units),
        f.takenAt,
      );
  }

  /** The journal units this instance knows: its segment files' and those it holds for deletion (any bucket's garbage may hold JOURNAL_BUCKET units). */
  known(): JournalKnown {
    const units = new Set(this.files().map((u) => u.unitId));
    // (A scan of the garbage, the journal's entries picked in SQL: run every minute, it parses only those.)
    for (const g of this.sql.exec<{ entry: string }>("SELECT entry FROM garbage WHERE json_extract(entry, '$.bucket') = ?", JOURNAL_BUCKET).toArray()) {
      const entry = JSON.parse(g.entry) as GarbageUnits;
      for (const u of entry.units) units.add(u.unitId);
      for (const id of entry.unitIds ?? []) units.add(id);
    }
    return { unitIds: [...units], taken: this.meta().segment };
  }

  /** Every segment file of this instance (when the bucket is deleted, they go with it). */
  files(): CodedUnit[] {
    return this.sql
      .exec<{ units: string }>('SELECT units FROM journal_files ORDER BY segment')
      .toArray()
      .flatMap((f) => JSON.parse(f.units) as CodedUnit[]);
  }

  status(): JournalStatus {
    const meta = this.meta();
    const pending = this.sql.exec<{ n: number }>('SELECT COUNT(*) AS n FROM journal_changes').one().n;
    const files = this.sql.exec<{ n: number }>('SELECT COUNT(*) AS n FROM journal_files').one().n;
    return {
      pending,
      dumping: meta.dump !== null,
      acked: meta.acked,
      ackedTakenAt: meta.ackedTakenAt,
      generation: meta.generation,
      complete: meta.complete !== null,
      files,
      redundancy: journalRedundancy(this.files()),
    };
  }

  /** Every segment file with its units, in segment order. */
  segmentFiles(): { segment: number; units: CodedUnit[] }[] {
    return this.sql
      .exec<{ segment: number; units: string }>('SELECT segment, units FROM journal_files ORDER BY segment')
      .toArray()
      .map((f) => ({ segment: f.segment, units: JSON.parse(f.units) as CodedUnit[] }));
  }

  /** See JournalCatalog.journalReplaceUnits. */
  replaceUnits(segment: number, before: string[], after: CodedUnit[], notBefore: number): boolean {
    const row = this.sql.exec<{ units: string }>('SELECT units FROM journal_files WHERE segment = ?', segment).toArray()[0];
    if (!row) return false;
    const now = JSON.parse(row.units) as CodedUnit[];
    if (JSON.stringify(now.map((u) => u.unitId)) !== JSON.stringify(before)) return false;
    this.sql.exec('UPDATE journal_files SET units = ? WHERE segment = ?', JSON.stringify(after), segment);
    const kept = new Set(after.map((u) => u.unitId));
    const gone = now.filter((u) => !kept.has(u.unitId));
    if (gone.length) queueGarbage(this.sql, { bucket: JOURNAL_BUCKET, units: gone }, notBefore);
    return true;
  }

  /** Whether each LAZY_TABLES table exists: asked once per object, not per row (one lives for one synchronous call, a take). */
  private readonly made = new Map<string, boolean>();

  /** Whether journaled table `table` exists here (a LAZY_TABLES one only once first used). */
  private exists(table: string): boolean {
    if (!LAZY_TABLES.includes(table)) return true;
    let found = this.made.get(table);
    if (found === undefined) {
      found = this.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", table).toArray().length > 0;
      this.made.set(table, found);
    }
    return found;
  }

  private dumpRows(table: string, after: JournalValue[] | null, limit: number): Record<string, JournalValue>[] {
    if (!this.exists(table)) return [];
    const pk = JOURNALED[table]!;
    const where = [rowFilter(table, ''), after ? `(${pk.join(', ')}) > (${pk.map(() => '?').join(', ')})` : null].filter(Boolean);
    return this.sql
      .exec<Record<string, JournalValue>>(
        `SELECT * FROM ${table}${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY ${pk.join(', ')} LIMIT ?`,
        ...(after ?? []),
        limit,
      )
      .toArray();
  }

  /** The row as it is now; null when it is gone or left the table's filter (a delivered event): recorded as deleted. */
  private row(table: string, k: JournalValue[]): Record<string, JournalValue> | null {
    if (!this.exists(table)) return null;
    const pk = JOURNALED[table]!;
    const where = [...pk.map((c) => `${c} = ?`), rowFilter(table, '')].filter(Boolean);
    return this.sql.exec<Record<string, JournalValue>>(`SELECT * FROM ${table} WHERE ${where.join(' AND ')}`, ...k).toArray()[0] ?? null;
  }
}

/** The units of segment files counted by shards recorded present, code and backend. */
export function journalRedundancy(units: CodedUnit[]): JournalRedundancy {
  const out: JournalRedundancy = { units: units.length, atRisk: 0, lost: 0, byCode: {}, shardsByBackend: {} };
  const groups = new Map<string, { k: number; m: number; on: string[]; units: number }>();
  for (const u of units) {
    const on = u.placement.filter((_, i) => !u.missing.includes(i)).sort();
    const group = `${u.k}+${u.m}:${on.join(',')}`;
    const g = groups.get(group) ?? groups.set(group, { k: u.k, m: u.m, on, units: 0 }).get(group)!;
    g.units++;
    const present = u.k + u.m - new Set(u.missing).size;
    if (present < u.k) out.lost++;
    else if (present === u.k && u.m > 0) out.atRisk++;
    const code = `${u.k}+${u.m}`;
    out.byCode[code] = (out.byCode[code] ?? 0) + 1;
    u.placement.forEach((id, i) => {
      if (!u.missing.includes(i)) out.shardsByBackend[id] = (out.shardsByBackend[id] ?? 0) + 1;
    });
  }
  out.placements = [...groups.values()];
  return out;
}

/** Tables an import writes, in order (versions before what points at them). */
const IMPORT_ORDER = ['state', 'versions', 'objects', 'uploads', 'parts', 'garbage', 'event_outbox'];

/**
 * A bucket's journaled rows written back into its instance (upkeep/journal-restore.ts, for a
 * catalog lost and rebuilt): each row as the journal held it, with what is derived from them (the
 * units index, the ledger's counts, the repair worklist of units recorded missing) rebuilt as a
 * commit builds it. Rows the instance already has are left alone. The bucket's own row is the
 * caller's (initBucket); rows of other tables are refused.
 */
export function importRows(
  sql: SqlStorage,
  ledger: { replace(key: string, before: null, after: ObjectManifest): void },
  rows: { t: string; r: Record<string, JournalValue> }[],
  now: number,
): number {
  let written = 0;
  const order = (x: { t: string; r: Record<string, JournalValue> }) => IMPORT_ORDER.indexOf(x.t);
  // Events by sequencer: a key's rise across its partitions (a split gives the new one a higher
  // epoch), so a key's events are queued in the order they happened whichever journal held them.
  const bySequencer = (a: Record<string, JournalValue>, b: Record<string, JournalValue>) =>
    String(a.sequencer) < String(b.sequencer) ? -1 : String(a.sequencer) > String(b.sequencer) ? 1 : Number(a.id) - Number(b.id);
  const sorted = [...rows].sort((a, b) => order(a) - order(b) || (a.t === 'event_outbox' ? bySequencer(a.r, b.r) : 0));
  if (sorted.some((x) => x.t === 'event_outbox')) createOutboxTables(sql);
  for (const { t, r } of sorted) {
    if (!IMPORT_ORDER.includes(t)) throw new Error(`journal import: table ${t} is not imported`);
    if (t === 'state' && TRANSIENT_STATE.includes(String(r.name))) continue;
    if (t === 'event_outbox') {
      if (restoreEvent(sql, r)) written++;
      continue;
    }
    const columns = Object.keys(r);
    const cursor = sql.exec(`INSERT OR IGNORE INTO ${t} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`, ...columns.map((c) => r[c]));
    if (cursor.rowsWritten === 0) continue;
    written++;
    if (t === 'versions' && Number(r.delete_marker) !== 1) {
      const manifest = JSON.parse(String(r.manifest)) as ObjectManifest;
      unitsOf(manifest).forEach((u, i) => {
        sql.exec(
          'INSERT OR IGNORE INTO units (unit_id, key, version_id, ordinal, shards, created_at, checked_at) VALUES (?, ?, ?, ?, ?, ?, 0)',
          u.unitId,
          String(r.key),
          manifest.versionId,
          i,
          u.k + u.m,
          now,
        );
      });
      ledger.replace(String(r.key), null, manifest);
    }
  }
  return written;
}
