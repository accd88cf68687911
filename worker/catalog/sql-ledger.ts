/**
 * The ledger of one bucket's CatalogObject: counts kept up to date inside every commit, delete and
 * repair mark (usage.ts), so bucket health is read in a few rows instead of a scan of the bucket:
 * objects, bytes, shard files and stored bytes per backend, the units with missing shards, and
 * the scrubber's progress in units. Synchronous, called inside the caller's transaction.
 */
import type { ObjectManifest } from '../format/manifest.ts';
import { advanceScrub, noScrubYet, type PassTimes } from './scrub-progress.ts';
import { DEAD_LETTER_ATTEMPTS, type BucketHealth, type DegradedUnit, type ScrubCursor, type ScrubProgress } from './types.ts';
import { classesFromLedger, degradedUnitsOf, usageDelta } from './usage.ts';
import { unitsOf } from './rules.ts';
import { bytesAtRiskAndLost, redundancyFromLedger } from './redundancy.ts';
import { placementsFromLedger } from './placement-counts.ts';

/** A row of `degraded_units`. */
export type DegradedRow = {
  key: string;
  unit_id: string;
  missing: string;
  since: number;
  spare: number;
  attempts: number;
  next_at: number;
  sent_at: number;
  last_error: string | null;
};

export function degradedUnitOf(r: DegradedRow): DegradedUnit {
  return {
    key: r.key,
    unitId: r.unit_id,
    missing: JSON.parse(r.missing) as number[],
    since: r.since,
    attempts: r.attempts,
    ...(r.next_at ? { nextAttemptAt: r.next_at } : {}),
    ...(r.last_error ? { lastError: r.last_error } : {}),
  };
}

export class SqlLedger {
  constructor(private readonly sql: SqlStorage) {}

  /**
   * A stored version of `key` goes from `before` to `after` (null: absent): a new version, a
   * removed one, or one rewritten in place. Other versions of the key (versioning) are untouched:
   * the worklist rows changed are those of these two manifests' units.
   */
  replace(key: string, before: ObjectManifest | null, after: ObjectManifest | null): void {
    for (const [name, n] of usageDelta(before, after)) {
      this.sql.exec('INSERT INTO ledger (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = value + excluded.value', name, n);
    }
    // A unit still degraded keeps its place on the repair worklist (since, attempts, backoff).
    type Kept = { unit_id: string; since: number; attempts: number; next_at: number; sent_at: number; last_error: string | null };
    const kept = new Map<string, Kept>();
    for (const u of [...unitsOf(before), ...unitsOf(after)]) {
      const row = this.sql
        .exec<Kept>('SELECT unit_id, since, attempts, next_at, sent_at, last_error FROM degraded_units WHERE unit_id = ?', u.unitId)
        .toArray()[0];
      if (row) kept.set(row.unit_id, row);
      this.sql.exec('DELETE FROM degraded_units WHERE unit_id = ?', u.unitId);
    }
    const committed = after ? Date.parse(after.lastModified) || Date.now() : 0;
    for (const u of degradedUnitsOf(after)) {
      const k = kept.get(u.unitId);
      this.sql.exec(
        'INSERT INTO degraded_units (key, unit_id, missing, since, spare, attempts, next_at, sent_at, last_error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
        key,
        u.unitId,
        JSON.stringify(u.missing),
        k?.since ?? committed,
        u.spare,
        k?.attempts ?? 0,
        k?.next_at ?? 0,
        k?.sent_at ?? 0,
        k?.last_error ?? null,
      );
    }
  }

  private passes(): PassTimes {
    const row = this.sql.exec<{ value: string }>("SELECT value FROM state WHERE name = 'scrub-progress'").toArray()[0];
    return row ? (JSON.parse(row.value) as PassTimes) : noScrubYet();
  }

  /** Coverage in units: checked in the current pass (between passes: the last complete one), of all stored now. */
  scrubProgress(): ScrubProgress {
    const p = this.passes();
    const since = p.passStartedAt ?? p.lastPassStartedAt;
    const count = this.sql
      .exec<{ units: number; checked: number }>(
        'SELECT COUNT(*) AS units, COALESCE(SUM(checked_at >= ? AND checked_at > 0), 0) AS checked FROM units',
        since ?? Number.MAX_SAFE_INTEGER,
      )
      .one();
    const oldest = this.sql
      .exec<{ unit_id: string; key: string; at: number }>(
        'SELECT unit_id, key, CASE WHEN checked_at > 0 THEN checked_at ELSE created_at END AS at FROM units ORDER BY at, unit_id LIMIT 1',
      )
      .toArray()[0];
    return { ...p, units: count.units, checked: count.checked, oldestUnchecked: oldest ? { unitId: oldest.unit_id, key: oldest.key, since: oldest.at } : null };
  }

  /** The scrubber stored cursor `to` (null: its pass is complete) at `now`. */
  scrubMoved(to: ScrubCursor | null, now: number): void {
    this.sql.exec("INSERT OR REPLACE INTO state (name, value) VALUES ('scrub-progress', ?)", JSON.stringify(advanceScrub(this.passes(), to, now)));
  }

  health(bucket: string, now: number): BucketHealth {
    const values = new Map(
      this.sql
        .exec<{ name: string; value: number }>('SELECT name, value FROM ledger')
        .toArray()
        .map((r) => [r.name, r.value]),
    );
    const backends: BucketHealth['backends'] = {};
    for (const [name, value] of values) {
      const m = /^(shards|stored):(.*)$/.exec(name);
      if (!m || value === 0) continue;
      const b = (backends[m[2]!] ??= { shards: 0, bytes: 0 });
      if (m[1] === 'shards') b.shards = value;
      else b.bytes = value;
    }
    const degraded = this.sql
      .exec<{ units: number; objects: number; oldest: number | null }>(
        'SELECT COUNT(*) AS units, COUNT(DISTINCT key) AS objects, MIN(since) AS oldest FROM degraded_units',
      )
      .one();
    const redundancy = this.sql
      .exec<{ atRisk: number; lost: number }>('SELECT COALESCE(SUM(spare = 0), 0) AS atRisk, COALESCE(SUM(spare < 0), 0) AS lost FROM degraded_units')
      .one();
    let missingShards = 0;
    const byMissing: Record<string, number> = {};
    for (const r of this.sql.exec<{ missing: string }>('SELECT missing FROM degraded_units').toArray()) {
      const n = (JSON.parse(r.missing) as number[]).length;
      missingShards += n;
      byMissing[n] = (byMissing[n] ?? 0) + 1;
    }
    const count = (query: string, ...args: number[]) => this.sql.exec<{ n: number }>(query, ...args).one().n;
    const byPolicy = redundancyFromLedger(values);
    return {
      bucket,
      objects: values.get('objects') ?? 0,
      bytes: values.get('bytes') ?? 0,
      inlineBytes: values.get('inline-bytes') ?? 0,
      backends,
      degradedObjects: degraded.objects,
      degradedUnits: degraded.units,
      missingShards,
      redundancy: { atRisk: redundancy.atRisk, lost: redundancy.lost, ...bytesAtRiskAndLost(byPolicy), byMissing, byPolicy },
      placements: placementsFromLedger(values),
      classes: classesFromLedger(values),
      oldestDegradedAt: degraded.oldest,
      repairStuck: count('SELECT COUNT(*) AS n FROM degraded_units WHERE attempts >= ?', DEAD_LETTER_ATTEMPTS),
      uploads: count('SELECT COUNT(*) AS n FROM uploads'),
      reservations: { held: count('SELECT COUNT(*) AS n FROM reservations'), expired: count('SELECT COUNT(*) AS n FROM reservations WHERE expires <= ?', now) },
      garbage: { queued: count('SELECT COUNT(*) AS n FROM garbage'), due: count('SELECT COUNT(*) AS n FROM garbage WHERE not_before <= ?', now) },
      scrub: this.scrubProgress(),
    };
  }

  /** Degraded units in (key, unit id) order after `after`. */
  degraded(after: { key: string; unitId: string } | null, limit: number): DegradedUnit[] {
    const rows = after
      ? this.sql
          .exec<DegradedRow>(
            'SELECT * FROM degraded_units WHERE key > ? OR (key = ? AND unit_id > ?) ORDER BY key, unit_id LIMIT ?',
            after.key,
            after.key,
            after.unitId,
            limit,
          )
          .toArray()
      : this.sql.exec<DegradedRow>('SELECT * FROM degraded_units ORDER BY key, unit_id LIMIT ?', limit).toArray();
    return rows.map(degradedUnitOf);
  }
}
