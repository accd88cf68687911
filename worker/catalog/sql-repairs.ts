/**
 * The bucket's repair worklist: its degraded units (the ledger's `degraded_units`, one row per
 * unit of a committed object with shards missing, kept inside every commit) with when each was
 * last tried, how often, and why it failed. CatalogObject's alarm hands due units to the repair
 * queue and the queue's consumer reports back (repairs.ts `repaired` / `failed`), so a unit stays
 * on the list until it is whole, whatever happens to one queue message or one isolate (issue 15).
 *
 * Order: least redundancy left first (`spare` = m minus the shards missing: a unit at k+0 before
 * one at k+1), then the fewest attempts (a unit that cannot be repaired yet does not hold up the
 * others), then the oldest.
 * Retries back off per unit (1 s doubling to 10 s: the config's `repairs`, model/repair-timing.ts) and never stop while the unit is
 * degraded; from DEAD_LETTER_ATTEMPTS on it is counted as stuck (status, metrics) and still tried.
 * After FAILURES_TO_THROTTLE failures in a row with no success between them, the bucket sends one
 * unit per backoff period (a canary) instead of batches: an outage costs a request every few
 * seconds, not a storm. Any success, or a backend seen healthy again (`reset`), makes every unit
 * due again at once: redundancy comes back as soon as it can, not at the next scheduled retry.
 * Per backend (issue 37: one outage cost 1,029 failed attempts in minutes, each unit retried on
 * its own clock and every success elsewhere making them all due again): a repair that failed
 * because the backend its shard must be written to did not answer backs that backend off (1 s
 * doubling to the same cap, state row 'repair-backend:<id>'). While it is backed off no
 * unit with a missing shard there is handed on; when its time comes one such unit goes (its
 * canary) and the others wait for its outcome. A repair that writes there again, or the backend
 * seen healthy (`reset(backend)`), ends its backoff and every unit is due again.
 */
import { DEAD_LETTER_ATTEMPTS, type DegradedUnit } from './types.ts';
import { degradedUnitOf, type DegradedRow } from './sql-ledger.ts';
import { REPAIR_TIMING_DEFAULTS, type RepairTiming } from '../model/repair-timing.ts';

export { DEAD_LETTER_ATTEMPTS };

/** The defaults' figures (model/repair-timing.ts), for what must not wait on a config. */
export const RETRY_FIRST_MS = REPAIR_TIMING_DEFAULTS.retryFirstMs;
export const RETRY_MAX_MS = REPAIR_TIMING_DEFAULTS.retryMaxMs;
/** A unit handed to the queue and not reported back within this is handed on again. */
export const SENT_TIMEOUT_MS = REPAIR_TIMING_DEFAULTS.resendAfterMs;
export const FAILURES_TO_THROTTLE = 3;
/** Units handed to the queue per alarm (one sendBatch). */
export const BATCH = 100;
/** Units waiting for a backed-off backend one alarm walks past before it stops (their rows are rewritten). */
export const SKIPPED_PER_TAKE = 10_000;
/** Rows read per query of takeDue's walk. */
const TAKE_PAGE = 100;

/**
 * The longest a backend that does not answer is left alone by the repairs of one bucket: as short
 * as a unit's own longest retry, so a backend back is found by the next canary as soon as before
 * even when nothing else calls it (no cron, no status read); an outage then costs a bucket one
 * canary (a HEAD of the missing shard) every 10 s, whatever the units waiting and the repairs
 * succeeding elsewhere.
 */
export const BACKEND_RETRY_MAX_MS = RETRY_MAX_MS;

/** The wait before try number `attempts` + 1 (a unit's, or a backend's after `attempts` failures): doubling to the cap. */
export function retryDelay(attempts: number, t: RepairTiming = REPAIR_TIMING_DEFAULTS): number {
  return Math.min(t.retryMaxMs, t.retryFirstMs * 2 ** Math.max(0, attempts - 1));
}

/** A backend's repair backoff: failures in a row, until when its units wait, and whether a canary is out. */
type BackendBackoff = { failures: number; until: number; canary?: boolean };
const BACKOFF = 'repair-backend:';

export class SqlRepairs {
  constructor(
    private readonly sql: SqlStorage,
    private readonly timing: RepairTiming = REPAIR_TIMING_DEFAULTS,
  ) {}

  private state(name: string): number {
    return Number(this.sql.exec<{ value: string }>('SELECT value FROM state WHERE name = ?', name).toArray()[0]?.value ?? 0);
  }

  private setState(name: string, value: number): void {
    this.sql.exec('INSERT OR REPLACE INTO state (name, value) VALUES (?, ?)', name, String(value));
  }

  get pending(): boolean {
    return this.sql.exec('SELECT 1 FROM degraded_units LIMIT 1').toArray().length > 0;
  }

  /** Failures in a row with no success between: the bucket sends canaries from FAILURES_TO_THROTTLE on. */
  get failures(): number {
    return this.state('repair-failures');
  }

  /**
   * Units due at `now`, in worklist order, marked as handed on. At most one while throttled.
   * Units waiting for a backed-off backend are skipped (their next try moved to its end) and the
   * walk goes on past them, up to SKIPPED_PER_TAKE of them: a worklist whose first rows all wait
   * still hands on the ones behind them, and leaves nothing due now that it did not look at
   * unless it hit that bound (then the alarm comes straight back, alarm-time.ts).
   */
  takeDue(now: number): DegradedUnit[] {
    const throttled = this.failures >= FAILURES_TO_THROTTLE;
    if (throttled && now < this.state('repair-last-send') + retryDelay(this.failures - FAILURES_TO_THROTTLE + 1, this.timing)) return [];
    const want = throttled ? 1 : BATCH;
    const backoffs = this.backoffs();
    const rows: DegradedRow[] = [];
    let skipped = 0;
    // With no backend backed off nothing is skipped: one page of what is wanted is the whole walk.
    const pageRows = backoffs.size ? TAKE_PAGE : want;
    for (;;) {
      // Every row of a page is either handed on (sent_at now) or pushed back (next_at later), so
      // the next page starts after it.
      const page = this.sql
        .exec<DegradedRow>(
          'SELECT * FROM degraded_units WHERE next_at <= ? AND sent_at <= ? ORDER BY spare, attempts, since LIMIT ?',
          now,
          now - this.timing.resendAfterMs,
          pageRows,
        )
        .toArray();
      for (const r of page) {
        if (rows.length === want) break;
        const waitUntil = backoffs.size ? this.waitFor(r, backoffs, now) : 0;
        if (waitUntil > now) {
          this.sql.exec('UPDATE degraded_units SET next_at = ? WHERE unit_id = ?', waitUntil, r.unit_id);
          skipped++;
          continue;
        }
        this.sql.exec('UPDATE degraded_units SET sent_at = ? WHERE unit_id = ?', now, r.unit_id);
        rows.push(r);
      }
      if (rows.length === want || page.length < pageRows || skipped >= SKIPPED_PER_TAKE) break;
    }
    if (rows.length) this.setState('repair-last-send', now);
    return rows.map(degradedUnitOf);
  }

  /**
   * Until when the unit of row `r` waits for backed-off backends its missing shards are on (0: it
   * goes now). A backend whose backoff ran out lets this one unit go as its canary: the others
   * wait until the canary's outcome is reported (or the resend time).
   */
  private waitFor(r: DegradedRow, backoffs: Map<string, BackendBackoff>, now: number): number {
    const targets = this.targetsOf(r.unit_id, JSON.parse(r.missing) as number[]).filter((id) => backoffs.has(id));
    const waiting = targets.map((id) => backoffs.get(id)!.until).filter((until) => until > now);
    if (waiting.length) return Math.max(...waiting);
    for (const id of targets) {
      const b = { ...backoffs.get(id)!, until: now + this.timing.resendAfterMs, canary: true };
      backoffs.set(id, b);
      this.setBackoff(id, b);
    }
    return 0;
  }

  /** The backends the shards `shards` of unit `unitId` are placed on (from its version's manifest). */
  targetsOf(unitId: string, shards: number[]): string[] {
    const row = this.sql
      .exec<{ manifest: string; ordinal: number }>(
        'SELECT v.manifest AS manifest, u.ordinal AS ordinal FROM units u JOIN versions v ON v.key = u.key AND v.version_id = u.version_id WHERE u.unit_id = ?',
        unitId,
      )
      .toArray()[0];
    if (!row) return [];
    const manifest = JSON.parse(row.manifest) as { storage?: { kind: string; units?: { placement: string[] }[] } };
    const placement = manifest.storage?.units?.[row.ordinal]?.placement ?? [];
    return [...new Set(shards.map((i) => placement[i]).filter((id): id is string => id !== undefined))];
  }

  /** Every backend backed off in this bucket's repairs. */
  backoffs(): Map<string, BackendBackoff> {
    const rows = this.sql.exec<{ name: string; value: string }>("SELECT name, value FROM state WHERE name LIKE 'repair-backend:%'").toArray();
    return new Map(rows.map((r) => [r.name.slice(BACKOFF.length), JSON.parse(r.value) as BackendBackoff]));
  }

  private setBackoff(backend: string, b: BackendBackoff | null): void {
    if (b) this.sql.exec('INSERT OR REPLACE INTO state (name, value) VALUES (?, ?)', BACKOFF + backend, JSON.stringify(b));
    else this.sql.exec('DELETE FROM state WHERE name = ?', BACKOFF + backend);
  }

  /** Units handed on that never reached the queue: due again. */
  unsend(units: { unitId: string }[]): void {
    for (const u of units) this.sql.exec('UPDATE degraded_units SET sent_at = 0 WHERE unit_id = ?', u.unitId);
  }

  /** Every unit handed on is due again (their messages are known lost); returns how many. */
  unsendAll(): number {
    return this.sql.exec('UPDATE degraded_units SET sent_at = 0 WHERE sent_at > 0').rowsWritten;
  }

  /**
   * A repair attempt of the unit failed: it backs off; the bucket counts a failure; each of
   * `unreachable` (the backends its shards could not be written to) backs off too.
   */
  failed(unitId: string, error: string, now: number, unreachable: readonly string[] = []): void {
    const backoffs = this.backoffs();
    for (const id of new Set(unreachable)) {
      const b = backoffs.get(id);
      // Reports of units handed on together (before the backoff began) count once; a canary's counts.
      if (b && !b.canary && now < b.until) continue;
      const failures = (b?.failures ?? 0) + 1;
      this.setBackoff(id, { failures, until: now + retryDelay(failures, this.timing) });
    }
    const row = this.sql.exec<{ attempts: number }>('SELECT attempts FROM degraded_units WHERE unit_id = ?', unitId).toArray()[0];
    if (!row) return; // repaired or gone meanwhile
    const attempts = row.attempts + 1;
    this.sql.exec(
      'UPDATE degraded_units SET attempts = ?, next_at = ?, sent_at = 0, last_error = ? WHERE unit_id = ?',
      attempts,
      now + retryDelay(attempts, this.timing),
      error.slice(0, 500),
      unitId,
    );
    this.setState('repair-failures', this.failures + 1);
  }

  /**
   * A repair succeeded or a backend is back: every unit is due now, no throttling. `backends`:
   * those known to answer again (a repair wrote there, or health saw them back): their backoff ends.
   */
  reset(backends: readonly string[] = []): void {
    for (const id of backends) this.setBackoff(id, null);
    this.setState('repair-failures', 0);
    this.sql.exec('UPDATE degraded_units SET next_at = 0 WHERE next_at > 0');
  }

  /**
   * When the alarm should fire next, or null with nothing to repair: at the next canary while
   * throttled, else when the first unit is due (handed-on units: when their report is overdue).
   */
  nextWake(now: number): number | null {
    const first = this.sql
      .exec<{ at: number | null }>(
        'SELECT MIN(MAX(next_at, CASE WHEN sent_at > 0 THEN sent_at + ? ELSE 0 END)) AS at FROM degraded_units',
        this.timing.resendAfterMs,
      )
      .one().at;
    if (first === null) return null;
    const failures = this.failures;
    const canary = failures >= FAILURES_TO_THROTTLE ? this.state('repair-last-send') + retryDelay(failures - FAILURES_TO_THROTTLE + 1, this.timing) : 0;
    return Math.max(now, first, canary);
  }

  /** Units tried DEAD_LETTER_ATTEMPTS times or more without success (still tried). */
  stuck(): number {
    return this.sql.exec<{ n: number }>('SELECT COUNT(*) AS n FROM degraded_units WHERE attempts >= ?', DEAD_LETTER_ATTEMPTS).one().n;
  }
}
