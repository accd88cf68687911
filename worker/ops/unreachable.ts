/**
 * Shards on backends the gateway cannot reach now count as missing (issue 37, "operator truth").
 * The catalog records a shard missing only once a read, a write or the scrubber finds it so; with
 * three of six backends down and nothing read yet, every 4+2 unit is unreadable while the
 * recorded counts still say "0 at exactly k, 0 below k". The status therefore recounts each
 * bucket's redundancy ladder from its placement counts (catalog/placement-counts.ts): a unit's
 * shards left are its present shards minus those on an unreachable backend.
 * Unreachable: a backend health knows down (its latest call or probe failed), one an operator put
 * in maintenance (known down: its shards are not read), and a retired one (never read).
 * The catalog journal's segment units are recounted the same way from their own placements.
 */
import type { BucketHealth, JournalStatus } from '../catalog/types.ts';
import { bytesAtRiskAndLost, emptyPolicy, type PolicyRedundancy } from '../catalog/redundancy.ts';
import type { DataHealth } from './data-health.ts';

/** A backend as the count needs it: its health state, its place in the fleet, maintenance. */
export interface ReachabilityOf {
  id: string;
  state: string;
  fleetState?: string;
  maintenance?: boolean;
}

/** The ids of the backends whose shards cannot be read now. */
export function unreachableIds(backends: readonly ReachabilityOf[]): Set<string> {
  return new Set(backends.filter((b) => b.state === 'down' || b.maintenance || b.fleetState === 'retired').map((b) => b.id));
}

/** A bucket's health with its redundancy (and its journal's) recounted, shards on `unreachable` backends missing. */
export function withUnreachableMissing(h: BucketHealth, unreachable: ReadonlySet<string>): BucketHealth {
  if (unreachable.size === 0) return h;
  const journal = h.journal ? journalWithUnreachableMissing(h.journal, unreachable) : undefined;
  return dataWithUnreachableMissing(journal ? { ...h, journal } : h, unreachable);
}

/**
 * The catalog journal's segment units recounted the same way (a journal unit at exactly k while
 * its other shards sit on down backends is one loss from leaving a lost catalog unrebuildable).
 */
export function journalWithUnreachableMissing(j: JournalStatus, unreachable: ReadonlySet<string>): JournalStatus {
  const r = j.redundancy;
  if (!r?.placements || unreachable.size === 0) return j;
  let atRisk = 0,
    lost = 0;
  for (const p of r.placements) {
    const missing = missingNow(p, unreachable);
    if (missing > p.m) lost += p.units;
    else if (missing === p.m && p.m > 0) atRisk += p.units;
  }
  return { ...j, redundancy: { ...r, atRisk, lost } };
}

function dataWithUnreachableMissing(h: BucketHealth, unreachable: ReadonlySet<string>): BucketHealth {
  if (!h.placements || !h.redundancy) return h;
  const byPolicy: Record<string, PolicyRedundancy> = {};
  const byMissing: Record<string, number> = {};
  let atRisk = 0,
    lost = 0;
  for (const p of h.placements) {
    const missing = missingNow(p, unreachable);
    const ladder = (byPolicy[`${p.k}+${p.m}`] ??= emptyPolicy(p.k, p.m));
    const slot = missing > p.m ? ladder.belowK : ladder.byShardsLeft[missing]!;
    slot.units += p.units;
    slot.bytes += p.bytes;
    if (missing > 0) byMissing[missing] = (byMissing[missing] ?? 0) + p.units;
    if (missing > p.m) lost += p.units;
    else if (missing === p.m && p.m > 0) atRisk += p.units;
  }
  return { ...h, redundancy: { atRisk, lost, ...bytesAtRiskAndLost(byPolicy), byMissing, byPolicy } };
}

/** A placement group's shards missing now: those recorded missing plus those on an unreachable backend. */
function missingNow(p: { k: number; m: number; on: readonly string[] }, unreachable: ReadonlySet<string>): number {
  return p.k + p.m - p.on.length + p.on.filter((id) => unreachable.has(id)).length;
}

/** Every bucket's health of `data` recounted with shards on `unreachable` backends missing. */
export function countUnreachableAsMissing(data: DataHealth, unreachable: ReadonlySet<string>): DataHealth {
  if (!unreachable.size) return data;
  const bucketListJournal = data.bucketListJournal ? journalWithUnreachableMissing(data.bucketListJournal, unreachable) : data.bucketListJournal;
  return { ...data, buckets: data.buckets.map((b) => withUnreachableMissing(b, unreachable)), bucketListJournal };
}
