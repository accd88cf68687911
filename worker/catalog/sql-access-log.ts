/**
 * Server access log records waiting in the TARGET bucket's instance to be delivered as one log
 * object (upkeep/access-log.ts writes it). Records of every source that logs to the same target
 * and prefix share a group (model/bucket-logging.ts logGroup), so they roll into one object.
 *
 * Exactly once: a roll first CLAIMS a batch in one transaction: the group's oldest pending
 * records (at most BATCH_LINES) are marked with a new batch id, and the batch's object key is
 * fixed then, with the id as its unique part. The deliverer writes that key with If-None-Match *
 * and then acknowledges (`delivered`), which deletes the batch's records. A deliverer that dies
 * after the claim leaves the batch claimed; after CLAIM_MS it is handed out again, same key, same
 * records: a write that had happened finds the key taken (412) and is acknowledged as done, one
 * that had not happens now. Records appended meanwhile are not in the batch: they wait for the next.
 *
 * Bounded: at most MAX_PENDING records wait per instance (further ones are dropped and counted,
 * never an error to anyone); a batch is at most BATCH_LINES records of at most MAX_LINE bytes.
 */
import type { LogGroup } from '../model/bucket-logging.ts';
import { logObjectKey } from '../model/bucket-logging.ts';

export const ACCESS_LOG_SCHEMA = `
CREATE TABLE IF NOT EXISTS access_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, grp TEXT NOT NULL, at INTEGER NOT NULL, line TEXT NOT NULL, batch TEXT);
CREATE INDEX IF NOT EXISTS access_log_pending ON access_log (batch, seq);
CREATE TABLE IF NOT EXISTS access_log_batches (id TEXT PRIMARY KEY, grp TEXT NOT NULL, object_key TEXT NOT NULL, claimed_at INTEGER NOT NULL) WITHOUT ROWID;
`;

export const MAX_PENDING = 100_000;
export const BATCH_LINES = 5_000;
export const MAX_LINE = 4_096;
/** A claimed batch not acknowledged within this long is handed out again. */
export const CLAIM_MS = 60_000;

export interface AccessLogBatch {
  id: string;
  objectKey: string;
  /** The records, one per line, each ending in '\n'. */
  body: string;
}

export interface AppendResult {
  /** Records dropped because MAX_PENDING were already waiting. */
  dropped: number;
  /** This append made the first record waiting (so the caller may time the roll). */
  first: boolean;
  /** A batch due now, claimed for the caller to deliver. */
  batch: AccessLogBatch | null;
}

const randomId = () =>
  [...crypto.getRandomValues(new Uint8Array(8))]
    .map((b) => b.toString(16).padStart(2, '0'))
    .join('')
    .toUpperCase();

export class SqlAccessLog {
  constructor(private readonly sql: SqlStorage) {}

  append(group: LogGroup, lines: { at: number; line: string }[], now: number, rollMs: number): AppendResult {
    const waiting = this.sql.exec<{ n: number }>('SELECT COUNT(*) AS n FROM access_log').one().n;
    const unbatched = this.sql.exec<{ n: number }>('SELECT COUNT(*) AS n FROM access_log WHERE batch IS NULL').one().n;
    const room = Math.max(0, MAX_PENDING - waiting);
    const grp = JSON.stringify(group);
    for (const l of lines.slice(0, room)) this.sql.exec('INSERT INTO access_log (grp, at, line) VALUES (?, ?, ?)', grp, l.at, l.line.slice(0, MAX_LINE));
    return { dropped: lines.length - Math.min(room, lines.length), first: unbatched === 0 && room > 0 && lines.length > 0, batch: this.take(now, rollMs) };
  }

  /** A batch to deliver: one whose claim expired, else the oldest group's if its oldest record is `rollMs` old. */
  take(now: number, rollMs: number): AccessLogBatch | null {
    const stale = this.sql
      .exec<{ id: string; object_key: string }>(
        'SELECT id, object_key FROM access_log_batches WHERE claimed_at <= ? ORDER BY claimed_at LIMIT 1',
        now - CLAIM_MS,
      )
      .toArray()[0];
    if (stale) {
      this.sql.exec('UPDATE access_log_batches SET claimed_at = ? WHERE id = ?', now, stale.id);
      return this.batch(stale.id, stale.object_key);
    }
    const oldest = this.sql.exec<{ grp: string; at: number }>('SELECT grp, at FROM access_log WHERE batch IS NULL ORDER BY seq LIMIT 1').toArray()[0];
    if (!oldest || oldest.at > now - rollMs) return null;
    const id = randomId();
    const objectKey = logObjectKey(JSON.parse(oldest.grp) as LogGroup, now, oldest.at, id);
    this.sql.exec(
      'UPDATE access_log SET batch = ? WHERE seq IN (SELECT seq FROM access_log WHERE batch IS NULL AND grp = ? ORDER BY seq LIMIT ?)',
      id,
      oldest.grp,
      BATCH_LINES,
    );
    this.sql.exec('INSERT INTO access_log_batches (id, grp, object_key, claimed_at) VALUES (?, ?, ?, ?)', id, oldest.grp, objectKey, now);
    return this.batch(id, objectKey);
  }

  private batch(id: string, objectKey: string): AccessLogBatch {
    const lines = this.sql.exec<{ line: string }>('SELECT line FROM access_log WHERE batch = ? ORDER BY seq', id).toArray();
    return { id, objectKey, body: lines.map((l) => l.line + '\n').join('') };
  }

  /** The batch is stored (or can never be: its target is gone): its records go. Idempotent. */
  delivered(id: string): void {
    this.sql.exec('DELETE FROM access_log WHERE batch = ?', id);
    this.sql.exec('DELETE FROM access_log_batches WHERE id = ?', id);
  }

  /** Records waiting, and when the oldest unclaimed one was made (null: none). */
  pending(): { records: number; oldestAt: number | null } {
    const r = this.sql
      .exec<{ n: number; oldest: number | null }>('SELECT COUNT(*) AS n, MIN(CASE WHEN batch IS NULL THEN at END) AS oldest FROM access_log')
      .one();
    return { records: r.n, oldestAt: r.oldest };
  }
}
