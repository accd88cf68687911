/**
 * OpsObject: the gateway's shared record of itself, one Durable Object instance (named 'ops',
 * binding OPS, SQLite storage) that every isolate flushes its counts to and every status, metrics
 * and page read comes from, so all isolates see the same picture. The logic is OpsBook
 * (book.ts); this file is its SQLite keeping: one row of totals, one row per minute, one per
 * data-health sample. A Durable Object runs one call at a time, so a read-modify-write of a row
 * needs no transaction of its own.
 * Known gap: one instance for the whole gateway; with flushes at most every few seconds per
 * isolate this is far below a Durable Object's request rate, but it is one point of contention.
 */
import { DurableObject } from 'cloudflare:workers';
import { OpsBook, type BookStore } from './book.ts';
import type { DataSample, MinuteRow, OpsCounters, OpsDelta, OpsRecord, OpsSnapshot } from './types.ts';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS totals (id INTEGER PRIMARY KEY CHECK (id = 1), since INTEGER NOT NULL, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS minutes (at INTEGER PRIMARY KEY, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS samples (at INTEGER PRIMARY KEY, data TEXT NOT NULL);
`;

class SqlBookStore implements BookStore {
  constructor(private readonly sql: SqlStorage) {
    sql.exec(SCHEMA);
  }
  loadTotals() {
    const row = this.sql.exec<{ since: number; data: string }>('SELECT since, data FROM totals WHERE id = 1').toArray()[0];
    return row ? { since: row.since, totals: JSON.parse(row.data) as OpsCounters } : null;
  }
  saveTotals(since: number, totals: OpsCounters) {
    this.sql.exec('INSERT OR REPLACE INTO totals (id, since, data) VALUES (1, ?, ?)', since, JSON.stringify(totals));
  }
  getMinute(at: number) {
    const row = this.sql.exec<{ data: string }>('SELECT data FROM minutes WHERE at = ?', at).toArray()[0];
    return row ? (JSON.parse(row.data) as OpsCounters) : null;
  }
  putMinute(at: number, counters: OpsCounters) {
    this.sql.exec('INSERT OR REPLACE INTO minutes (at, data) VALUES (?, ?)', at, JSON.stringify(counters));
  }
  minutesSince(at: number): MinuteRow[] {
    return this.sql
      .exec<{ at: number; data: string }>('SELECT at, data FROM minutes WHERE at >= ? ORDER BY at', at)
      .toArray()
      .map((r) => ({ at: r.at, counters: JSON.parse(r.data) }));
  }
  putSample(s: DataSample) {
    this.sql.exec('INSERT OR REPLACE INTO samples (at, data) VALUES (?, ?)', s.at, JSON.stringify(s));
  }
  samplesSince(at: number): DataSample[] {
    return this.sql
      .exec<{ data: string }>('SELECT data FROM samples WHERE at >= ? ORDER BY at', at)
      .toArray()
      .map((r) => JSON.parse(r.data));
  }
  prune(before: number) {
    this.sql.exec('DELETE FROM minutes WHERE at < ?', before);
    this.sql.exec('DELETE FROM samples WHERE at < ?', before);
  }
}

export class OpsObject extends DurableObject implements OpsRecord {
  private readonly book: OpsBook;

  constructor(ctx: DurableObjectState, env: Cloudflare.Env) {
    super(ctx, env);
    this.book = new OpsBook(new SqlBookStore(ctx.storage.sql));
  }

  async record(delta: OpsDelta): Promise<void> {
    this.book.record(delta);
  }

  async sample(sample: DataSample): Promise<void> {
    this.book.sample(sample);
  }

  async snapshot(sinceMs: number): Promise<OpsSnapshot> {
    return this.book.snapshot(sinceMs);
  }
}
