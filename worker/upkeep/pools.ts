/**
 * Policies' pools of backends (config `policies.<name>.backends`, issue 44) as the fleet mover
 * sees them. A unit records its placement, not its policy: the pool it keeps to is read from
 * where its shards are, the union of the pools that hold all of them (the shard being moved
 * aside). A unit no pool holds (a policy without one) may go to any active backend. The mover
 * (drain.ts), its bill (drain-estimate.ts) and the rebalance (rebalance-pick.ts) keep a pooled
 * unit inside its pool: a pool is the operator's word on where those shards go (cost, residency),
 * so a drain with no target inside it waits (counted `noTarget`) rather than leave it.
 */

/** The backends the unit's shards keep to, judged without shard `except` (-1: all of them); null: any. */
export function unitPool(placement: readonly string[], except: number, pools: readonly (readonly string[])[]): Set<string> | null {
  const others = placement.filter((_, i) => i !== except);
  const holding = pools.filter((p) => others.every((id) => p.includes(id)));
  return holding.length ? new Set(holding.flat()) : null;
}

/** `candidates` inside `pool` (all of them when the unit has none). */
export function withinPool<B extends { id: string }>(candidates: readonly B[], pool: Set<string> | null): B[] {
  return pool ? candidates.filter((b) => pool.has(b.id)) : [...candidates];
}
