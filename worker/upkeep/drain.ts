/**
 * The mover's sweep (issue 26), run by the cron and by the admin API's `drain`: walks each
 * bucket's unit index (every unit of every stored version) from where the last run stopped, and
 * moves each shard whose placement names a leaving backend (config state draining or retired) to
 * the backend placement's rules now choose for it (engine replacementBackend: active backends
 * only, failure domains kept at every step, the unit's other shards left where they are), one
 * shard at a time (move.ts). A run stops at `maxMoves` moves or its deadline, and records where
 * it stopped and what it moved in the bucket's drain row (drain-progress.ts), so a gateway killed
 * mid-drain resumes there and moves nothing twice: a shard already moved no longer names the
 * leaving backend.
 * Rebalance (opt-in, `"rebalance": true` on an active backend, typically one just added): the
 * same sweep moves onto that backend exactly the shards rendezvous placement now assigns to it,
 * one per unit at most (the shard on the backend placement now ranks out), so a new backend
 * fills to its share without anything else moving. A pass that finds nothing left to move onto
 * it records the backend as filled, and later runs skip the walk until the config changes.
 * Limits: a backend's configured `limits` (bytes and requests per second) pace the moves that
 * read from or write to it: a move waits until both fit, or the run ends at its deadline.
 * Known gaps: parts of multipart uploads still in progress are not in the unit index: they move
 * once completed (an upload aborted is collected). A leaving backend's shards count as moved off
 * only for the gateway's own buckets' stored versions.
 */
import type { Backend } from '../../backends/types.ts';
import type { UnitRecord } from '../catalog/types.ts';
import type { UpkeepCatalog } from '../catalog/ports.ts';
import { shardLayout } from '../format/layout.ts';
import { replacementBackend } from '../engine/index.ts';
import { unitPool, withinPool } from './pools.ts';
import { rebalancePick } from './rebalance-pick.ts';
import { moveShard, type MoveDeps, type MoveOutcome } from './move.ts';
import { parseDrainState, recordFilled, recordMoved, type DrainState } from './drain-progress.ts';
import { Pacer, type BackendLimits } from './pacer.ts';
import { forEachBucket } from './each-bucket.ts';

/** Requests one move makes between its source and its target (a copy's GETs and PUT, the commit's). */
const REQUESTS_PER_MOVE = 5;

/** A configured backend as the mover sees it. */
export interface FleetBackend {
  id: string;
  domain: string;
  state: 'active' | 'draining' | 'retired';
  /** Opt-in on an active backend: move onto it the shards placement now assigns to it. */
  rebalance?: boolean;
  limits?: BackendLimits;
}

export interface DrainDeps extends MoveDeps {
  /** Every configured backend, leaving ones included (their domains count until moved). */
  fleet: FleetBackend[];
  /** The policies' pools (config `backends`): a pooled unit's shards move within its pool (pools.ts). */
  pools?: string[][];
  sleep?: (ms: number) => Promise<void>;
}

export interface DrainOptions {
  /** Most shards moved (or tried) this run. */
  maxMoves: number;
  /** ms since the epoch: no move starts after it. */
  deadline: number;
  /** One bucket only. */
  bucket?: string;
}

export interface DrainReport {
  /** Shards whose move was committed: copied as stored, or rebuilt from the others. */
  copied: number;
  rebuilt: number;
  /** Shard-file bytes committed elsewhere. */
  bytes: number;
  /** Moves that lost to a concurrent overwrite, delete or move (nothing to do any more). */
  gone: number;
  /** Moves that must wait (target down, too few shards to rebuild), the first few with why. */
  waiting: number;
  waits: { unitId: string; shard: number; from: string; to: string; error: string }[];
  /** Shards on a leaving backend that no active backend can take within the placement rules. */
  noTarget: number;
  /** Of the moves committed, those onto a backend being rebalanced (not off a leaving one). */
  rebalanced: number;
  /** Buckets whose pass over their units completed in this run. */
  passesCompleted: number;
  /** True when the run was cut short by its move limit or deadline. */
  stopped: boolean;
}

const PAGE = 50;
const WAITS_SHOWN = 20;

export async function drainBatch(deps: DrainDeps, options: DrainOptions): Promise<DrainReport> {
  const report: DrainReport = {
    copied: 0,
    rebuilt: 0,
    bytes: 0,
    gone: 0,
    waiting: 0,
    waits: [],
    noTarget: 0,
    rebalanced: 0,
    passesCompleted: 0,
    stopped: false,
  };
  const leaving = new Set(deps.fleet.filter((b) => b.state !== 'active').map((b) => b.id));
  const filling = deps.fleet.filter((b) => b.state === 'active' && b.rebalance).map((b) => b.id);
  if (leaving.size === 0 && filling.length === 0) return report;
  const domains = new Map(deps.fleet.map((b) => [b.id, b.domain]));
  const targets = deps.fleet
    .filter((b) => b.state === 'active')
    .map((b) => deps.backends.get(b.id))
    .filter((b): b is Backend => !!b);
  const pacer = new Pacer(deps.fleet, deps.now ?? Date.now, deps.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms))));
  let budget = options.maxMoves;
  const mayStart = () => budget > 0 && (deps.now ?? Date.now)() < options.deadline;
  const refused = new Set<string>();
  report.stopped = !(await forEachBucket(deps.catalog, drainBucket, { only: options.bucket }));
  return report;

  /** One bucket from its cursor; false when the run must stop first (the cursor is kept where it stopped). */
  async function drainBucket(bucket: string): Promise<boolean> {
    const state = parseDrainState(await deps.catalog.getDrainState(bucket));
    // Nothing leaves, and every backend being filled was found full by a whole pass: no walk.
    const toFill = filling.filter((id) => !state.filled[id]);
    if (leaving.size === 0 && toFill.length === 0) return true;
    if (state.cursor === null) {
      state.passFills = 0;
      state.passFor = toFill; // a pass already under way when a backend was flagged does not count for it
    }
    try {
      for (;;) {
        const page = await deps.catalog.listUnits(bucket, state.cursor, PAGE);
        if (page.length === 0) {
          state.cursor = null;
          state.passes++;
          report.passesCompleted++;
          // A whole pass with no move onto, and no wait for, the backends being filled: they are full.
          if (state.passFills === 0) for (const id of toFill.filter((b) => state.passFor.includes(b))) state.filled[id] = (deps.now ?? Date.now)();
          return true;
        }
        for (const record of page) {
          if (
            leaving.size &&
            !(await drainUnit(bucket, record, leaving, targets, domains, deps, pacer, state, report, options.deadline, mayStart, () => budget--, refused))
          )
            return false;
          if (
            toFill.length &&
            !(await fillUnit(bucket, record, toFill, targets, domains, deps, pacer, state, report, options.deadline, mayStart, () => budget--, refused))
          )
            return false;
          state.cursor = record.unitId;
        }
      }
    } finally {
      await deps.catalog.setDrainState(bucket, JSON.stringify(state));
    }
  }
}

/** Moves the unit's shards off leaving backends; false when the run must stop first (the unit is then not done). */
async function drainUnit(
  bucket: string,
  record: UnitRecord,
  leaving: Set<string>,
  targets: Backend[],
  domains: Map<string, string>,
  deps: DrainDeps,
  pacer: Pacer,
  state: DrainState,
  report: DrainReport,
  deadline: number,
  mayStart: () => boolean,
  spend: () => void,
  refused: Set<string>,
): Promise<boolean> {
  const unit = { ...record.unit, placement: [...record.unit.placement] };
  for (let shard = 0; shard < unit.placement.length; shard++) {
    if (!leaving.has(unit.placement[shard]!)) continue;
    const inPool = withinPool(targets, unitPool(unit.placement, shard, deps.pools ?? []));
    const target = replacementBackend(`${bucket}/${record.key}`, unit.placement, shard, inPool, (id) => domains.get(id), unit.m);
    if (!target) {
      report.noTarget++;
      continue;
    }
    // A target that refused a write in this run is not asked again until the next run: a backend
    // that is down costs one attempt a run, not one per shard.
    if (refused.has(target.id)) {
      report.waiting++;
      if (report.waits.length < WAITS_SHOWN)
        report.waits.push({ unitId: unit.unitId, shard, from: unit.placement[shard]!, to: target.id, error: 'the target refused a write earlier in this run' });
      continue;
    }
    if (!mayStart()) return false;
    const bytes = shardLayout(unit, shard).shardFileLen();
    const charge = { bytes, requests: REQUESTS_PER_MOVE };
    if (
      !(await pacer.admit(
        new Map([
          [unit.placement[shard]!, charge],
          [target.id, charge],
        ]),
        deadline,
      ))
    )
      return false;
    spend();
    const outcome: MoveOutcome = await moveShard(bucket, { ...record, unit }, shard, target, deps);
    if (outcome.kind === 'moved') {
      report[outcome.how]++;
      report.bytes += bytes;
      recordMoved(state, outcome.move.from, bytes, (deps.now ?? Date.now)());
      unit.placement[shard] = target.id;
      unit.missing = unit.missing.filter((i) => i !== shard);
    } else if (outcome.kind === 'gone') {
      report.gone++;
      return true; // the unit changed: its new state is the next pass's
    } else {
      report.waiting++;
      if (outcome.at === 'target') refused.add(target.id);
      if (report.waits.length < WAITS_SHOWN) report.waits.push({ ...outcome.move, error: outcome.error });
    }
  }
  return true;
}

/**
 * Moves onto each backend of `filling` the unit's shard that rendezvous placement over the active
 * backends now assigns to it, if the unit has none there (rebalance-pick.ts says which). False
 * when the run must stop first. A unit placement would not give the backend, or that it could not
 * take within the rules, is left as it is.
 */
async function fillUnit(
  bucket: string,
  record: UnitRecord,
  filling: string[],
  targets: Backend[],
  domains: Map<string, string>,
  deps: DrainDeps,
  pacer: Pacer,
  state: DrainState,
  report: DrainReport,
  deadline: number,
  mayStart: () => boolean,
  spend: () => void,
  refused: Set<string>,
): Promise<boolean> {
  const unit = { ...record.unit, placement: [...record.unit.placement] };
  const name = `${bucket}/${record.key}`;
  for (const id of filling) {
    const pick = rebalancePick(name, unit, id, targets, (b) => domains.get(b), deps.pools);
    const target = targets.find((b) => b.id === id);
    if (!pick || !target) continue;
    state.passFills++; // a move onto it is due: this pass does not find it full
    if (refused.has(id)) {
      report.waiting++;
      if (report.waits.length < WAITS_SHOWN)
        report.waits.push({ unitId: unit.unitId, shard: pick.shard, from: pick.from, to: id, error: 'the target refused a write earlier in this run' });
      continue;
    }
    if (!mayStart()) return false;
    const bytes = shardLayout(unit, pick.shard).shardFileLen();
    const charge = { bytes, requests: REQUESTS_PER_MOVE };
    if (
      !(await pacer.admit(
        new Map([
          [pick.from, charge],
          [id, charge],
        ]),
        deadline,
      ))
    )
      return false;
    spend();
    const outcome: MoveOutcome = await moveShard(bucket, { ...record, unit }, pick.shard, target, deps);
    if (outcome.kind === 'moved') {
      report[outcome.how]++;
      report.rebalanced++;
      report.bytes += bytes;
      recordFilled(state, id, bytes, (deps.now ?? Date.now)());
      unit.placement[pick.shard] = id;
    } else if (outcome.kind === 'gone') {
      report.gone++;
      return true;
    } else {
      report.waiting++;
      if (outcome.at === 'target') refused.add(id);
      if (report.waits.length < WAITS_SHOWN) report.waits.push({ ...outcome.move, error: outcome.error });
    }
  }
  return true;
}
