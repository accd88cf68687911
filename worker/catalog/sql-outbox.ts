/**
 * The transactional outbox of bucket event notifications (docs/NOTIFICATIONS.md), in the SQLite
 * storage of the partition that holds the key: `announce` runs inside the transaction that
 * commits a change (durable-object.ts), so a committed change always has its event rows and a
 * refused or rolled-back one never has. Delivery (event-delivery.ts) reads the rows from the
 * partition's alarm and records each outcome here.
 * - One row per (event, matching rule): AWS sends each matching configuration its own message.
 *   The row keeps its body as sent, so every retry sends the same bytes and the same event id.
 * - The sequencer: per partition, the hex of the partition map's epoch then a counter, so it
 *   increases for a key across a split (the key's new partition has a higher epoch). The counter
 *   never goes below the clock (ms x 1000), so a catalog rebuilt from its journal still numbers
 *   above what was sent before. Compared as strings of equal length, as AWS's. It is kept in the
 *   object's memory (one thread) and read back at start from the newest row, which pruning
 *   never deletes (and from the counter table earlier releases wrote on every event): a commit
 *   adds one row and writes nothing else (a counter rolled back with its transaction only leaves a
 *   gap, which sequencers may have).
 * - Per destination, the cumulative `queued` figure is delivered + dead + dropped + backlog (each
 *   row ends in exactly one of those): derived when read, so a commit does not update the
 *   destination's row (its `queued` column, counted by earlier releases, satisfies the same sum).
 * - Bounded: at most `outboxLimit` undelivered rows per partition. When a change would go past it,
 *   'drop-oldest' deletes the oldest undelivered rows (counted as dropped per destination),
 *   'refuse' throws SlowDown so the change's transaction rolls back and nothing is stored.
 * - Kept after delivery: the last DELIVERED_KEPT delivered rows and DEAD_KEPT dead-lettered ones,
 *   for `shardgate events BUCKET`; counts per destination are cumulative.
 * The tables are made by the first event (a bucket that never configured notifications has none:
 * no migration, nothing read on its writes but the one state row of its rules).
 */
import { journalTriggers } from './journal-schema.ts';
import { isReservedKey } from '../model/reserved-keys.ts';
import { S3Error } from '../model/errors.ts';
import { matchingRules, destinationOf, parseStoredNotification, type EventName, type NotificationRule } from '../model/notification.ts';
import type { EventOrigin } from '../model/event-origin.ts';
import type { NotificationSettings } from '../model/notification-settings.ts';
import { newId } from '../format/ids.ts';
import { eventBody, s3EventRecord, testEventBody, type ChangeFacts } from './event-record.ts';
import { readState } from './sql-state.ts';
import type { DestinationEvents, EventEntry, OutboxState } from './types.ts';

/** State row of the bucket's notification rules (JSON NotificationRule[]); mirrored to partitions. */
export const NOTIFICATION = 'notification';

const DELIVERED_KEPT = 200;
const DEAD_KEPT = 1000;

/** One delivery due: what the sender needs. */
export type OutboxRow = {
  id: number;
  event_id: string;
  destination: string;
  event_name: string;
  key: string;
  sequencer: string;
  body: string;
  created: number;
  attempts: number;
};

const SCHEMA = [
  `CREATE TABLE IF NOT EXISTS event_outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id TEXT NOT NULL,
    destination TEXT NOT NULL,
    event_name TEXT NOT NULL,
    key TEXT NOT NULL,
    sequencer TEXT NOT NULL,
    body TEXT NOT NULL,
    created INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    state TEXT NOT NULL DEFAULT 'queued',
    done_at INTEGER,
    last_error TEXT
  )`,
  'CREATE INDEX IF NOT EXISTS event_outbox_due ON event_outbox (state, destination, id)',
  'CREATE TABLE IF NOT EXISTS event_sequencer (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)',
  `CREATE TABLE IF NOT EXISTS event_destinations (
    destination TEXT PRIMARY KEY,
    queued INTEGER NOT NULL DEFAULT 0,
    delivered INTEGER NOT NULL DEFAULT 0,
    retried INTEGER NOT NULL DEFAULT 0,
    dead INTEGER NOT NULL DEFAULT 0,
    dropped INTEGER NOT NULL DEFAULT 0,
    failures INTEGER NOT NULL DEFAULT 0,
    next_at INTEGER NOT NULL DEFAULT 0,
    last_error TEXT
  )`,
];

/** The outbox's tables and their journal triggers (journal-schema.ts: only undelivered events are journaled). */
export function createOutboxTables(sql: SqlStorage): void {
  for (const s of SCHEMA) sql.exec(s);
  journalOutbox(sql);
}

/**
 * The outbox's journal triggers, made once. Releases before them kept the outbox out of the
 * journal: the undelivered events such a release queued are noted as changes when the triggers
 * are made, so the next segments carry them too.
 */
function journalOutbox(sql: SqlStorage): void {
  if (sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = 'journal_event_outbox_insert'").toArray().length) return;
  sql.exec(journalTriggers('event_outbox'));
  sql.exec("INSERT OR REPLACE INTO journal_changes (tbl, pk) SELECT 'event_outbox', json_array(id) FROM event_outbox WHERE state = 'queued' ORDER BY id");
}

/** The destination's figures row (counts from zero), made once: its `queued` is derived (status()). */
function knownDestination(sql: SqlStorage, destination: string): void {
  sql.exec('INSERT OR IGNORE INTO event_destinations (destination) VALUES (?)', destination);
}

/**
 * An undelivered event of a journal queued again (sql-journal.ts importRows; the tables exist):
 * under the next free id (ids are per partition, and a merge's live catalog has its own), unless
 * an event of that id and destination is here already (an import run again). Whether it was queued.
 */
export function restoreEvent(sql: SqlStorage, row: Record<string, SqlStorageValue | null>): boolean {
  const { id: _id, ...event } = row;
  const columns = Object.keys(event);
  const queued = sql.exec(
    `INSERT INTO event_outbox (${columns.join(', ')}) SELECT ${columns.map(() => '?').join(', ')} WHERE NOT EXISTS (SELECT 1 FROM event_outbox WHERE event_id = ? AND destination = ?)`,
    ...columns.map((c) => event[c]),
    event.event_id,
    event.destination,
  ).rowsWritten;
  if (queued) knownDestination(sql, String(event.destination));
  return queued > 0;
}

/** Parsed rules by their row's text: one parse per configuration, not per write. Bounded (one entry). */
let parsed: { text: string | null; rules: NotificationRule[] | null } = { text: null, rules: null };
function rulesOf(text: string | null): NotificationRule[] | null {
  if (parsed.text !== text) parsed = { text, rules: parseStoredNotification(text) };
  return parsed.rules;
}

/**
 * One per catalog object (durable-object.ts keeps it while its storage lives): it remembers that the
 * tables exist and the last sequencer, so a commit's event costs one INSERT.
 */
export class SqlOutbox {
  /** The tables were seen (they are only ever removed with the whole storage, and this object with it). */
  private tables = false;
  /** The last sequencer's counter handed out (null: not read since this object was made). */
  private counter: number | null = null;
  /**
   * Undelivered rows, at most: counted when unknown, raised by this object's inserts, and left
   * as it is by deliveries, dead letters and drops (which only lower the truth). So a commit
   * checks the bound against this figure and counts (an index scan of the whole backlog) only
   * when the figure says the bound may be reached. Whoever else writes rows (a journal import)
   * drops this object (durable-object.ts), and the next one counts.
   */
  private backlogAtMost: number | null = null;

  constructor(private readonly sql: SqlStorage) {}

  private hasTables(): boolean {
    if (!this.tables && this.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'event_outbox'").toArray().length > 0) {
      journalOutbox(this.sql); // tables an earlier release made: journaled from now on
      this.tables = true;
    }
    return this.tables;
  }

  private ensureTables(): void {
    if (!this.hasTables()) createOutboxTables(this.sql);
    this.tables = true;
  }

  /**
   * When the rows just written to `destinations` are due: after the coalescing time (the alarm set
   * by the first commit of that time serves the others: one run for all of their events), or
   * after the backoff of a destination that is failing (a commit never wakes the alarm for nothing).
   */
  private dueAt(destinations: string[], now: number, settings: NotificationSettings): number {
    let at = Number.POSITIVE_INFINITY;
    for (const d of destinations) {
      const next = this.sql.exec<{ next_at: number }>('SELECT next_at FROM event_destinations WHERE destination = ?', d).toArray()[0]?.next_at ?? 0;
      at = Math.min(at, Math.max(now + settings.coalesceMs, next));
    }
    return at;
  }

  /** The bucket's rules as this partition holds them (null: none). */
  rules(): NotificationRule[] | null {
    return rulesOf(readState(this.sql, NOTIFICATION));
  }

  /** Undelivered rows now. */
  backlog(): number {
    return this.hasTables() ? this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM event_outbox WHERE state = 'queued'").one().n : 0;
  }

  /**
   * A write's first step in strict mode: SlowDown before any shard is sent when the outbox is
   * full and the bucket has rules (the commit checks again, in its own transaction).
   */
  assertRoom(settings: NotificationSettings): void {
    if (settings.whenFull !== 'refuse' || this.rules() === null) return;
    if (this.backlogAtMost !== null && this.backlogAtMost < settings.outboxLimit) return;
    this.backlogAtMost = this.backlog();
    if (this.backlogAtMost >= settings.outboxLimit) throw full();
  }

  /**
   * The change's event rows, in the caller's transaction: one per rule it matches. Answers when
   * they are due for delivery (null: no rule matched, nothing written, nothing read but the rules).
   */
  announce(
    change: ChangeFacts,
    c: { bucket: string; region: string; epoch: number; origin: EventOrigin | undefined; now: number },
    settings: NotificationSettings,
  ): number | null {
    const rules = this.rules();
    if (rules === null || isReservedKey(change.key)) return null; // the gateway's own keys (an adopted bucket's tombstones) are never announced
    const matched = matchingRules(rules, change.event, change.key);
    if (matched.length === 0) return null;
    this.ensureTables();
    this.makeRoom(matched.length, settings);
    const sequencer = this.nextSequencer(c.epoch, c.now);
    for (const rule of matched) {
      const record = s3EventRecord(change, { ...c, sequencer, configurationId: rule.id, time: c.now });
      this.insert(destinationOf(rule.arn)!, change.event, change.key, sequencer, eventBody(record), c.now);
    }
    return this.dueAt(
      matched.map((r) => destinationOf(r.arn)!),
      c.now,
      settings,
    );
  }

  /** The s3:TestEvent each destination of a new configuration receives (one per destination), in the caller's transaction. */
  announceTest(
    bucket: string,
    rules: readonly NotificationRule[],
    epoch: number,
    now: number,
    requestId: string,
    settings: NotificationSettings,
  ): number | null {
    const destinations = [...new Set(rules.map((r) => destinationOf(r.arn)!))];
    if (destinations.length === 0) return null;
    this.ensureTables();
    this.makeRoom(destinations.length, settings);
    const sequencer = this.nextSequencer(epoch, now);
    for (const d of destinations) this.insert(d, 's3:TestEvent', '', sequencer, testEventBody(bucket, now, requestId), now);
    return this.dueAt(destinations, now, settings);
  }

  private insert(destination: string, eventName: string, key: string, sequencer: string, body: string, now: number): void {
    this.sql.exec(
      'INSERT INTO event_outbox (event_id, destination, event_name, key, sequencer, body, created) VALUES (?, ?, ?, ?, ?, ?, ?)',
      newId(),
      destination,
      eventName,
      key,
      sequencer,
      body,
      now,
    );
    knownDestination(this.sql, destination);
  }

  /** Room for `n` more undelivered rows: SlowDown (strict) or the oldest dropped and counted. */
  private makeRoom(n: number, settings: NotificationSettings): void {
    if (this.backlogAtMost !== null && this.backlogAtMost + n <= settings.outboxLimit) {
      this.backlogAtMost += n; // the rows the caller inserts next
      return;
    }
    const backlog = this.backlog();
    const over = backlog + n - settings.outboxLimit;
    if (over <= 0) {
      this.backlogAtMost = backlog + n;
      return;
    }
    this.backlogAtMost = backlog;
    if (settings.whenFull === 'refuse') throw full();
    this.backlogAtMost = settings.outboxLimit; // the oldest `over` dropped below, then `n` inserted
    const oldest = this.sql
      .exec<{ id: number; destination: string }>("SELECT id, destination FROM event_outbox WHERE state = 'queued' ORDER BY id LIMIT ?", over)
      .toArray();
    for (const r of oldest) {
      this.sql.exec('DELETE FROM event_outbox WHERE id = ?', r.id);
      this.sql.exec('UPDATE event_destinations SET dropped = dropped + 1 WHERE destination = ?', r.destination);
    }
  }

  /** The next sequencer: the epoch (6 hex digits) then the counter (14), upper case as AWS's. */
  private nextSequencer(epoch: number, now: number): string {
    const n = Math.max(this.lastCounter() + 1, now * 1000);
    this.counter = n;
    return (epoch.toString(16).padStart(6, '0') + n.toString(16).padStart(14, '0')).toUpperCase();
  }

  /** The counter of the newest sequencer stored: the newest row's, or the counter table's of an earlier release. */
  private lastCounter(): number {
    if (this.counter !== null) return this.counter;
    const newest = this.sql.exec<{ sequencer: string }>('SELECT sequencer FROM event_outbox ORDER BY id DESC LIMIT 1').toArray()[0]?.sequencer;
    const stored = this.sql.exec<{ n: number }>('SELECT n FROM event_sequencer WHERE id = 1').toArray()[0]?.n ?? 0;
    return Math.max(newest ? Number.parseInt(newest.slice(6), 16) : 0, stored);
  }

  /** Destinations with undelivered rows whose backoff has passed at `now`, each with its first `limit` rows in order. */
  due(now: number, limit: number): { destination: string; rows: OutboxRow[] }[] {
    if (!this.hasTables()) return [];
    const destinations = this.sql
      .exec<{ destination: string }>(
        "SELECT DISTINCT o.destination FROM event_outbox o LEFT JOIN event_destinations d ON d.destination = o.destination WHERE o.state = 'queued' AND COALESCE(d.next_at, 0) <= ?",
        now,
      )
      .toArray();
    return destinations.map(({ destination }) => ({
      destination,
      rows: this.sql
        .exec<OutboxRow>(
          "SELECT id, event_id, destination, event_name, key, sequencer, body, created, attempts FROM event_outbox WHERE state = 'queued' AND destination = ? ORDER BY id LIMIT ?",
          destination,
          limit,
        )
        .toArray(),
    }));
  }

  /** When the next delivery is due (ms), null when nothing waits. */
  nextDue(): number | null {
    if (!this.hasTables()) return null;
    const row = this.sql
      .exec<{ at: number | null }>(
        "SELECT MIN(COALESCE(d.next_at, 0)) AS at FROM event_outbox o LEFT JOIN event_destinations d ON d.destination = o.destination WHERE o.state = 'queued'",
      )
      .one();
    return row.at;
  }

  /** Rows the destination acknowledged. A row dropped meanwhile is simply gone. */
  delivered(destination: string, ids: number[], now: number): void {
    for (const id of ids) {
      const changed = this.sql.exec("UPDATE event_outbox SET state = 'delivered', done_at = ?, last_error = NULL WHERE id = ? AND state = 'queued'", now, id);
      if (changed.rowsWritten > 0) this.sql.exec('UPDATE event_destinations SET delivered = delivered + 1 WHERE destination = ?', destination);
    }
    if (ids.length) this.sql.exec('UPDATE event_destinations SET failures = 0, next_at = 0, last_error = NULL WHERE destination = ?', destination);
    this.prune('delivered', DELIVERED_KEPT);
  }

  /**
   * The first undelivered row failed: it waits with every later row of its destination (so a
   * key's events arrive in order), for `backoffMs` doubled per consecutive failure; after
   * `maxAttempts` it is dead-lettered and the next row goes on at once.
   */
  failed(destination: string, id: number, error: string, now: number, settings: NotificationSettings): void {
    const row = this.sql.exec<{ attempts: number }>("SELECT attempts FROM event_outbox WHERE id = ? AND state = 'queued'", id).toArray()[0];
    const attempts = (row?.attempts ?? 0) + 1;
    const message = error.slice(0, 500);
    if (row && attempts >= settings.maxAttempts) {
      this.sql.exec("UPDATE event_outbox SET state = 'dead', attempts = ?, done_at = ?, last_error = ? WHERE id = ?", attempts, now, message, id);
      this.sql.exec('UPDATE event_destinations SET dead = dead + 1, failures = 0, next_at = 0, last_error = ? WHERE destination = ?', message, destination);
      this.prune('dead', DEAD_KEPT);
      return;
    }
    if (row) this.sql.exec('UPDATE event_outbox SET attempts = ?, last_error = ? WHERE id = ?', attempts, message, id);
    const d = this.sql.exec<{ failures: number }>('SELECT failures FROM event_destinations WHERE destination = ?', destination).toArray()[0];
    const failures = (d?.failures ?? 0) + 1;
    const wait = Math.min(settings.maxBackoffMs, settings.backoffMs * 2 ** Math.min(failures - 1, 30));
    this.sql.exec(
      'UPDATE event_destinations SET retried = retried + 1, failures = ?, next_at = ?, last_error = ? WHERE destination = ?',
      failures,
      now + wait,
      message,
      destination,
    );
  }

  private prune(state: OutboxState, keep: number): void {
    this.sql.exec(
      `DELETE FROM event_outbox WHERE state = ? AND id <= (SELECT id FROM event_outbox WHERE state = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`,
      state,
      state,
      keep,
    );
  }

  /** Figures per destination at `now`. */
  status(now: number): DestinationEvents[] {
    if (!this.hasTables()) return [];
    return this.sql
      .exec<{
        destination: string;
        queued: number;
        delivered: number;
        retried: number;
        dead: number;
        dropped: number;
        next_at: number;
        last_error: string | null;
        backlog: number;
        oldest: number | null;
      }>(
        `SELECT d.*, (SELECT COUNT(*) FROM event_outbox o WHERE o.destination = d.destination AND o.state = 'queued') AS backlog,
          (SELECT MIN(created) FROM event_outbox o WHERE o.destination = d.destination AND o.state = 'queued') AS oldest
         FROM event_destinations d ORDER BY d.destination`,
      )
      .toArray()
      .map((r) => ({
        destination: r.destination,
        backlog: r.backlog,
        queued: r.delivered + r.dead + r.dropped + r.backlog,
        delivered: r.delivered,
        retried: r.retried,
        deadLettered: r.dead,
        dropped: r.dropped,
        oldestUndeliveredMs: r.oldest === null ? null : Math.max(0, now - r.oldest),
        lastError: r.last_error,
        nextAttemptAt: r.backlog > 0 ? Math.max(r.next_at, r.oldest ?? 0) : null,
      }));
  }

  /** The newest `limit` rows, newest first. */
  recent(limit: number): EventEntry[] {
    if (!this.hasTables()) return [];
    return this.sql
      .exec<{
        event_id: string;
        destination: string;
        event_name: string;
        key: string;
        sequencer: string;
        created: number;
        state: OutboxState;
        attempts: number;
        done_at: number | null;
        last_error: string | null;
      }>(
        'SELECT event_id, destination, event_name, key, sequencer, created, state, attempts, done_at, last_error FROM event_outbox ORDER BY id DESC LIMIT ?',
        limit,
      )
      .toArray()
      .map((r) => ({
        eventId: r.event_id,
        destination: r.destination,
        eventName: r.event_name,
        key: r.key,
        sequencer: r.sequencer,
        created: r.created,
        state: r.state,
        attempts: r.attempts,
        doneAt: r.done_at,
        lastError: r.last_error,
      }));
  }
}

const full = () => new S3Error('SlowDown', "Please reduce your request rate: the bucket's event outbox is full (notifications.whenFull is 'refuse').");

/** The event a delete is, from what it did and who asked (lifecycle expirations are their own events). */
export function removalEvent(deleteMarker: boolean, origin: EventOrigin | undefined): EventName {
  const lifecycle = origin?.op === 'LifecycleExpiration';
  if (deleteMarker) return lifecycle ? 's3:LifecycleExpiration:DeleteMarkerCreated' : 's3:ObjectRemoved:DeleteMarkerCreated';
  return lifecycle ? 's3:LifecycleExpiration:Delete' : 's3:ObjectRemoved:Delete';
}

/** The event a commit of a new version is, by the S3 operation that made it. */
export function creationEvent(origin: EventOrigin | undefined, multipart: boolean): EventName {
  if (multipart) return 's3:ObjectCreated:CompleteMultipartUpload';
  if (origin?.op === 'PostObject') return 's3:ObjectCreated:Post';
  if (origin?.op === 'CopyObject') return 's3:ObjectCreated:Copy';
  return 's3:ObjectCreated:Put';
}

/** One figure per destination over several partitions: counts added, the oldest wait the longest. */
export function sumEventStatus(parts: DestinationEvents[][]): DestinationEvents[] {
  const by = new Map<string, DestinationEvents>();
  for (const d of parts.flat()) {
    const a = by.get(d.destination);
    if (!a) {
      by.set(d.destination, { ...d });
      continue;
    }
    a.backlog += d.backlog;
    a.queued += d.queued;
    a.delivered += d.delivered;
    a.retried += d.retried;
    a.deadLettered += d.deadLettered;
    a.dropped += d.dropped;
    a.oldestUndeliveredMs = maxOrNull(a.oldestUndeliveredMs, d.oldestUndeliveredMs);
    a.lastError ??= d.lastError;
    a.nextAttemptAt = a.nextAttemptAt === null ? d.nextAttemptAt : d.nextAttemptAt === null ? a.nextAttemptAt : Math.min(a.nextAttemptAt, d.nextAttemptAt);
  }
  return [...by.values()].sort((x, y) => (x.destination < y.destination ? -1 : 1));
}

const maxOrNull = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.max(a, b));

/** The newest `limit` of several partitions' newest events. */
export function newestEvents(parts: EventEntry[][], limit: number): EventEntry[] {
  return parts
    .flat()
    .sort((a, b) => b.created - a.created || (a.sequencer < b.sequencer ? 1 : -1))
    .slice(0, limit);
}
