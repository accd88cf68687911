/**
 * Units counted by where their present shards are (issue 37, "operator truth"): the ledger keeps,
 * per policy and per multiset of backends holding a unit's shards not recorded missing, how many
 * units and object bytes are placed so. With the set of backends down now (ops/unreachable.ts),
 * the redundancy ladder then counts a shard on an unreachable backend as missing without reading
 * a manifest: a unit's shards left are its present shards minus those on unreachable backends.
 * Kept inside every commit, delete and repair mark with the other counts (usage.ts); schema 6
 * took the counts of what was already stored (schema-migrations.ts).
 * Known gap: one ledger row pair per distinct placement; with placement spread by hashing over
 * many backends (n backends, k+m shards: up to C(n, k+m) sets) a bucket holds that many rows.
 */
import type { CodedUnit } from '../format/manifest.ts';
import { policyName, type PlacementCount } from './ledger-figures.ts';

export type { PlacementCount };

const UNITS = 'placed-units:';
const BYTES = 'placed-bytes:';

/** The ledger entries a stored unit accounts for under its placement: one unit, and its bytes. */
export function placementEntries(u: Pick<CodedUnit, 'k' | 'm' | 'size' | 'missing' | 'placement'>): [string, number][] {
  const on = u.placement.filter((_, i) => !u.missing.includes(i)).sort();
  const at = `${policyName(u)}:${JSON.stringify(on)}`;
  return [
    [UNITS + at, 1],
    [BYTES + at, u.size],
  ];
}

/** The placements from the ledger's entries (name -> value); entries of other kinds are ignored. */
export function placementsFromLedger(entries: Iterable<[string, number]>): PlacementCount[] {
  const out = new Map<string, PlacementCount>();
  for (const [name, value] of entries) {
    const m = /^placed-(units|bytes):(\d+)\+(\d+):(\[.*\])$/.exec(name);
    if (!m || value === 0) continue;
    const at = `${m[2]}+${m[3]}:${m[4]}`;
    const p = out.get(at) ?? { k: Number(m[2]), m: Number(m[3]), on: JSON.parse(m[4]!) as string[], units: 0, bytes: 0 };
    p[m[1] as 'units' | 'bytes'] += value;
    out.set(at, p);
  }
  return [...out.values()];
}
