/**
 * Which shard of a unit a rebalance moves onto a backend (issue 26), shared by the mover
 * (drain.ts) and the bill (drain-estimate.ts) so that the estimate counts exactly the moves the
 * mover makes. The backend gets a shard only when rendezvous placement over the active backends
 * (as a write would choose now) assigns it the unit and the unit has none there; the shard given
 * up is one on a backend placement no longer picks, the least preferred first, provided failure
 * domains still hold with the backend in its place (replacementBackend with it as the only
 * candidate). A unit kept to a pool (pools.ts) is placed as a write of its policy would place it,
 * over its pool, and never onto a backend outside it. Null: the unit stays as it is.
 */
import type { Backend } from '../../backends/types.ts';
import type { CodedUnit } from '../format/manifest.ts';
import { placeShards, replacementBackend } from '../engine/index.ts';
import { unitPool, withinPool } from './pools.ts';

export function rebalancePick(
  name: string,
  unit: Pick<CodedUnit, 'placement' | 'm'>,
  id: string,
  fleet: readonly Pick<Backend, 'id' | 'domain'>[],
  domainOf: (id: string) => string | undefined,
  pools: readonly (readonly string[])[] = [],
): { shard: number; from: string } | null {
  const n = unit.placement.length;
  const pool = unitPool(unit.placement, -1, pools);
  if (pool && !pool.has(id)) return null;
  const active = withinPool(fleet, pool); // the active backends, within the unit's pool
  if (active.length < n || unit.placement.includes(id)) return null;
  const target = active.find((b) => b.id === id);
  if (!target) return null;
  // Placement as a write would choose it now: k+m of the active backends (a replicated unit: its copies).
  const ideal = placeShards(name, active, n - unit.m, unit.m).map((b) => b.id);
  if (!ideal.includes(id)) return null;
  const displaced = unit.placement
    .map((from, shard) => ({ from, shard }))
    .filter(({ from }) => !ideal.includes(from))
    .reverse();
  return displaced.find(({ shard }) => replacementBackend(name, unit.placement, shard, [target], domainOf, unit.m)?.id === id) ?? null;
}
