/**
 * A drain's progress (issue 26): what the mover has moved off each leaving backend, kept per
 * bucket in the catalog's `state` table (row 'drain', no schema change) with the mover's cursor
 * through the bucket's units, and what is left there, read from each bucket's ledger (shard
 * files and stored bytes per backend, kept inside every commit and every move's commit). Left
 * only ever goes down while a drain runs: new units are never placed on a leaving backend, a
 * move's commit takes its shard off the count in the same step, and deletes only remove.
 * Rate: bytes moved over the time between the first and the last move recorded; time remaining:
 * bytes left at that rate (null until something has moved).
 */
import type { JournalStatus } from '../catalog/types.ts';
import type { UpkeepCatalog, HealthCatalog, JournalCatalog } from '../catalog/ports.ts';
import { BUCKET_LIST_INSTANCE } from '../format/journal.ts';
import { forEachBucket } from './each-bucket.ts';

/** One bucket's row. */
export interface DrainState {
  /** The mover's place in the bucket's units (id order); null: the next run starts a pass. */
  cursor: string | null;
  /** Complete passes over the bucket's units. */
  passes: number;
  /** Per backend moved off: shards and shard-file bytes committed elsewhere, first and last move (ms). */
  moved: Record<string, { shards: number; bytes: number; first: number; last: number }>;
  /** Per backend being rebalanced: shards and bytes moved onto it. */
  filledWith: Record<string, { shards: number; bytes: number; first: number; last: number }>;
  /** Backends being rebalanced that a whole pass found with nothing more to take (ms of that pass's end). */
  filled: Record<string, number>;
  /** Moves onto, and waits for, backends being rebalanced in the pass under way. */
  passFills: number;
  /** The backends being rebalanced when the pass under way started (only they can be found full by it). */
  passFor: string[];
}

export const noDrainYet = (): DrainState => ({ cursor: null, passes: 0, moved: {}, filledWith: {}, filled: {}, passFills: 0, passFor: [] });

export function parseDrainState(value: string | null): DrainState {
  return value === null ? noDrainYet() : { ...noDrainYet(), ...(JSON.parse(value) as Partial<DrainState>) };
}

/** Records a committed move of `bytes` off `backend` at `at` (in place). */
export function recordMoved(state: DrainState, backend: string, bytes: number, at: number): void {
  const m = (state.moved[backend] ??= { shards: 0, bytes: 0, first: at, last: at });
  m.shards++;
  m.bytes += bytes;
  m.last = at;
}

/** Records a committed move of `bytes` onto `backend`, being rebalanced, at `at` (in place). */
export function recordFilled(state: DrainState, backend: string, bytes: number, at: number): void {
  const m = (state.filledWith[backend] ??= { shards: 0, bytes: 0, first: at, last: at });
  m.shards++;
  m.bytes += bytes;
  m.last = at;
}

export interface BackendDrainProgress {
  backend: string;
  state: string;
  /** Shard files (and their stored bytes) the catalog still records on the backend. */
  left: { shards: number; bytes: number };
  /** The catalog journal's shard files still there (journal-upkeep.ts moves them, not the mover): the backend is empty when both are 0. */
  journalShards: number;
  moved: { shards: number; bytes: number };
  /** Bytes per second over the moves recorded; null before two moves apart in time. */
  bytesPerSecond: number | null;
  /** Seconds until `left.bytes` are moved at that rate; null without a rate. */
  secondsRemaining: number | null;
  /** Per bucket: shards left (only buckets with some). */
  buckets: Record<string, number>;
}

/** Progress of every backend that is not active, over every bucket. */
export async function drainProgress(
  catalog: UpkeepCatalog & HealthCatalog & Partial<Pick<JournalCatalog, 'journalStatus'>>,
  leaving: { id: string; state: string }[],
  now = new Date(),
): Promise<BackendDrainProgress[]> {
  const out = new Map(
    leaving.map((b) => [
      b.id,
      {
        backend: b.id,
        state: b.state,
        left: { shards: 0, bytes: 0 },
        journalShards: 0,
        moved: { shards: 0, bytes: 0 },
        first: Infinity,
        last: 0,
        buckets: {} as Record<string, number>,
      },
    ]),
  );
  const countJournal = (status: JournalStatus | null | undefined) => {
    for (const p of out.values()) p.journalShards += status?.redundancy?.shardsByBackend[p.backend] ?? 0;
  };
  countJournal(await catalog.journalStatus?.(BUCKET_LIST_INSTANCE));
  await forEachBucket(catalog, async (name) => {
    const health = await catalog.bucketHealth(name, now);
    countJournal(health.journal);
    const state = parseDrainState(await catalog.getDrainState(name));
    for (const p of out.values()) {
      const here = health.backends[p.backend];
      if (here && here.shards > 0) {
        p.left.shards += here.shards;
        p.left.bytes += here.bytes;
        p.buckets[name] = here.shards;
      }
      const m = state.moved[p.backend];
      if (m) {
        p.moved.shards += m.shards;
        p.moved.bytes += m.bytes;
        p.first = Math.min(p.first, m.first);
        p.last = Math.max(p.last, m.last);
      }
    }
  });
  return [...out.values()].map(({ first, last, ...p }) => {
    const seconds = (last - first) / 1000;
    const bytesPerSecond = seconds > 0 ? p.moved.bytes / seconds : null;
    return { ...p, bytesPerSecond, secondsRemaining: bytesPerSecond ? p.left.bytes / bytesPerSecond : null };
  });
}

export interface BackendRebalanceProgress {
  backend: string;
  /** Shards and shard-file bytes moved onto it so far. */
  moved: { shards: number; bytes: number };
  /** Buckets a whole pass found with nothing more to move onto it, of all buckets. */
  bucketsFilled: number;
  buckets: number;
  /** True once every bucket is filled: the flag can be taken off (it then costs nothing anyway). */
  done: boolean;
}

/** Progress of every backend being rebalanced onto (`"rebalance": true`), over every bucket. */
export async function rebalanceProgress(catalog: UpkeepCatalog, filling: { id: string }[]): Promise<BackendRebalanceProgress[]> {
  const out = filling.map((b) => ({ backend: b.id, moved: { shards: 0, bytes: 0 }, bucketsFilled: 0, buckets: 0, done: false }));
  await forEachBucket(catalog, async (name) => {
    const state = parseDrainState(await catalog.getDrainState(name));
    for (const p of out) {
      p.buckets++;
      if (state.filled[p.backend]) p.bucketsFilled++;
      const m = state.filledWith[p.backend];
      if (m) {
        p.moved.shards += m.shards;
        p.moved.bytes += m.bytes;
      }
    }
  });
  return out.map((p) => ({ ...p, done: p.bucketsFilled === p.buckets }));
}
