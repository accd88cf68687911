/**
 * The bill first (issue 26): what draining one backend will cost, before anything moves. Walks
 * every bucket's unit index as the mover would, picks each shard's target as the mover would
 * (engine replacementBackend over the active backends) and adds up what the move asks of each
 * backend, the way upkeep/cost.ts counts traffic (its Usage, priced by its `money`):
 * - a copy (engine copyCalls): 3 ranged GETs for the source's header and footer and 1 for its
 *   blocks (egress: the file plus 12 bytes), 1 PUT of the file at the target;
 * - a shard that cannot be copied (recorded missing, or its backend retired): rebuilt from the
 *   first k other shards, each read whole (1 GET and its file, plus 3 GETs for the header and
 *   footer of one of them), 1 PUT at the target;
 * - the old copy's DELETE after the grace delay (and, for a unit with a tag record, 1 GET at a
 *   holder, 1 PUT at the target and 1 DELETE at the source; its bytes are not counted: under a KB).
 * Assumes every move succeeds at the first try: a move retried (a target down) costs again.
 * `estimateRebalance` prices a rebalance onto a backend the same way, over the moves the mover
 * would make (rebalance-pick.ts): one shard per unit that placement now assigns to it.
 */
import type { UpkeepCatalog } from '../catalog/ports.ts';
import type { CodedUnit } from '../format/manifest.ts';
import { shardLayout } from '../format/layout.ts';
import { copyCalls, replacementBackend, type BackendPrices } from '../engine/index.ts';
import { money, type Money, type Usage } from './cost.ts';
import type { FleetBackend } from './drain.ts';
import { rebalancePick } from './rebalance-pick.ts';
import { unitPool, withinPool } from './pools.ts';
import { forEachBucket } from './each-bucket.ts';

export interface DrainEstimate {
  /** The backend drained (or, for a rebalance, filled). */
  backend: string;
  /** Shards to move and their shard-file bytes. */
  shards: number;
  bytes: number;
  /** Of which rebuilt from the others (not copied). */
  rebuilt: number;
  /** Shards no active backend can take within the placement rules (they would stay). */
  noTarget: number;
  /** Per backend touched: requests and bytes, and their price (null: unpriced). */
  byBackend: Record<string, { usage: Usage; cost: Money | null }>;
  /** Over the priced backends. */
  total: { gets: number; puts: number; deletes: number; egressBytes: number; cost: number };
  /** False when the walk stopped at its unit limit: the figures cover only the units walked. */
  complete: boolean;
  unitsWalked: number;
}

export async function estimateDrain(
  catalog: UpkeepCatalog,
  backend: string,
  fleet: FleetBackend[],
  prices: Record<string, BackendPrices | null>,
  maxUnits = 1_000_000,
  pools: string[][] = [],
): Promise<DrainEstimate> {
  const domains = new Map(fleet.map((b) => [b.id, b.domain]));
  // The estimate answers "what if this backend were drained", whatever its state now.
  const targets = fleet.filter((b) => b.state === 'active' && b.id !== backend).map((b) => ({ id: b.id, domain: b.domain }));
  return estimateMoves(catalog, backend, fleet, prices, maxUnits, (unit, name) => {
    const shard = unit.placement.indexOf(backend);
    if (shard < 0) return null;
    const target = replacementBackend(
      name,
      unit.placement,
      shard,
      withinPool(targets, unitPool(unit.placement, shard, pools)),
      (id) => domains.get(id),
      unit.m,
    );
    return target ? { shard, target: target.id } : 'noTarget';
  });
}

/**
 * What a rebalance onto `backend` (an active backend, before "rebalance": true is set) would cost.
 * A unit with a shard on a draining or retired backend is the drain's: the mover moves that shard
 * first, most often onto the backend placement now ranks in, and the drain's estimate prices it.
 */
export async function estimateRebalance(
  catalog: UpkeepCatalog,
  backend: string,
  fleet: FleetBackend[],
  prices: Record<string, BackendPrices | null>,
  maxUnits = 1_000_000,
  pools: string[][] = [],
): Promise<DrainEstimate> {
  const domains = new Map(fleet.map((b) => [b.id, b.domain]));
  const active = fleet.filter((b) => b.state === 'active').map((b) => ({ id: b.id, domain: b.domain }));
  const leaving = new Set(fleet.filter((b) => b.state !== 'active').map((b) => b.id));
  return estimateMoves(catalog, backend, fleet, prices, maxUnits, (unit, name) => {
    if (unit.placement.some((id) => leaving.has(id))) return null;
    const pick = rebalancePick(name, unit, backend, active, (id) => domains.get(id), pools);
    return pick ? { shard: pick.shard, target: backend } : null;
  });
}

/** Walks every unit; `choose` names the shard a move takes from it and where to, if any. */
async function estimateMoves(
  catalog: UpkeepCatalog,
  backend: string,
  fleet: FleetBackend[],
  prices: Record<string, BackendPrices | null>,
  maxUnits: number,
  choose: (unit: CodedUnit, name: string) => { shard: number; target: string } | 'noTarget' | null,
): Promise<DrainEstimate> {
  const retired = new Set(fleet.filter((b) => b.state === 'retired').map((b) => b.id));
  const usage = new Map<string, Usage>();
  const at = (id: string) => {
    let u = usage.get(id);
    if (!u) usage.set(id, (u = { storedBytes: 0, shards: 0, putRequests: 0, getRequests: 0, deleteRequests: 0, bytesIn: 0, bytesOut: 0 }));
    return u;
  };
  const out: DrainEstimate = {
    backend,
    shards: 0,
    bytes: 0,
    rebuilt: 0,
    noTarget: 0,
    byBackend: {},
    total: { gets: 0, puts: 0, deletes: 0, egressBytes: 0, cost: 0 },
    complete: true,
    unitsWalked: 0,
  };
  await forEachBucket(catalog, async (name) => {
    let cursor: string | null = null;
    for (;;) {
      const page = await catalog.listUnits(name, cursor, 200);
      if (!page.length) break;
      for (const r of page) {
        if (++out.unitsWalked > maxUnits) {
          out.complete = false;
          break;
        }
        const move = choose(r.unit, `${name}/${r.key}`);
        if (move === 'noTarget') out.noTarget++;
        else if (move) addMove(r.unit, move.shard, move.target);
      }
      if (!out.complete) break;
      cursor = page[page.length - 1]!.unitId;
    }
    return out.complete;
  });

  function addMove(unit: CodedUnit, shard: number, target: string): void {
    const source = unit.placement[shard]!;
    const fileLen = shardLayout(unit, shard).shardFileLen();
    out.shards++;
    out.bytes += fileLen;
    const calls = copyCalls(unit, shard);
    if (unit.missing.includes(shard) || retired.has(source)) {
      out.rebuilt++;
      const sources = unit.placement
        .map((id, i) => ({ id, i }))
        .filter(({ id, i }) => i !== shard && !unit.missing.includes(i) && !retired.has(id))
        .slice(0, unit.k);
      sources.forEach(({ id, i }, n) => {
        const len = shardLayout(unit, i).shardFileLen();
        at(id).getRequests += 1 + (n === 0 ? 3 : 0);
        at(id).bytesOut += len;
      });
    } else {
      at(source).getRequests += calls.sourceGets;
      at(source).bytesOut += calls.sourceBytes;
    }
    at(target).putRequests += calls.targetPuts;
    at(target).bytesIn += calls.targetBytes;
    if (!retired.has(source)) at(source).deleteRequests += 1;
    if (unit.tagRecord) {
      at(unit.placement.find((id, i) => i !== shard && !retired.has(id)) ?? source).getRequests += 1;
      at(target).putRequests += 1;
      if (!retired.has(source)) at(source).deleteRequests += 1;
    }
  }

  for (const [id, u] of usage) {
    const cost = money(u, prices[id] ?? null);
    out.byBackend[id] = { usage: u, cost };
    out.total.gets += u.getRequests;
    out.total.puts += u.putRequests;
    out.total.deletes += u.deleteRequests;
    out.total.egressBytes += u.bytesOut;
    out.total.cost += cost?.total ?? 0;
  }
  return out;
}
