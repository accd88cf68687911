/**
 * The cost calculator's model (`shardgate cost`, issue 14): what storing and serving a workload
 * costs per month under a storage scheme (replicas or k+m erasure coding) spread over a set of
 * providers, each one failure domain holding one backend, as shardgate places shards.
 *
 * - Placement: the k+m shards of an object go round the providers, at most max(1, m) on one
 *   (engine/placement.ts's rule); a scheme the providers cannot hold is infeasible. Over many
 *   objects each provider holds (k+m)/P shards of each object on average (the extra shards of
 *   k+m not divisible by P land on different providers for different objects), so storage,
 *   PUTs and reads are computed with that average share.
 * - Storage: GB stored x (k+m)/k, split by share; each provider's price per GB-month.
 * - Reads: the gateway reads k shards of each object, the cheapest ones (engine/read-cost.ts):
 *   the shards on the cheapest providers (by egress, then GET price) fill k, averaged over which
 *   providers hold an object's extra shards; each GB read costs 1/k GB of egress from each shard
 *   read, each object GET one GET-class request per shard read.
 * - Writes: each object PUT costs k+m PUT-class requests, by share.
 * - Survives: how many providers may fail, worst case (the fullest first), with every object
 *   still readable: the most providers whose shards of one object add up to at most m.
 * Known gaps: shard headers and footers (a few hundred bytes per shard), small objects stored
 * inline in the catalog, multipart units, free allowances, tiers and minimum charges are not
 * modelled; reads are whole objects large enough that egress outweighs a request (for tiny
 * reads the gateway keeps the data shards, read-cost.ts).
 */
import type { BackendPrices } from '../../worker/engine/index.ts';
import { tolerated } from '../../worker/config/failure-domains.ts';

export interface Provider {
  name: string;
  prices: BackendPrices;
}

export interface Scheme {
  /** "replicate-3", "4+2" */
  name: string;
  k: number;
  m: number;
}

export interface Workload {
  storedGB: number;
  readGBPerMonth: number;
  objects: number;
  putsPerMonth: number;
  getsPerMonth: number;
}

export interface CostRow {
  scheme: Scheme;
  /** Null: the providers cannot hold this scheme (more than max(1, m) shards of an object on one). */
  feasible: boolean;
  /** Why not, when infeasible. */
  reason?: string;
  /** Shards of one object on each provider, most first (worst case). */
  shardsPerProvider: number[];
  storedGB: number;
  storage: number;
  egress: number;
  requests: number;
  total: number;
  /** Providers that may fail with every object still readable. */
  survives: number;
  /** Per provider: average shards per object, GB stored, and its share of each cost. */
  providers: { name: string; share: number; storedGB: number; storage: number; egress: number; requests: number }[];
}

export const STANDARD_SCHEMES: Scheme[] = [
  { name: 'replicate-3', k: 1, m: 2 },
  { name: '4+2', k: 4, m: 2 },
  { name: '8+3', k: 8, m: 3 },
  { name: '10+4', k: 10, m: 4 },
];

export function costOf(providers: Provider[], scheme: Scheme, w: Workload): CostRow {
  const { k, m } = scheme;
  const n = k + m,
    P = providers.length,
    cap = Math.max(1, m);
  const worst = Array.from({ length: P }, (_, i) => Math.floor(n / P) + (i < n % P ? 1 : 0)).filter((c) => c > 0);
  const empty = { storedGB: 0, storage: 0, egress: 0, requests: 0, total: 0, survives: 0, providers: [] };
  if (worst[0]! > cap) {
    const need = Math.ceil(n / cap);
    return { scheme, feasible: false, reason: `needs ${need} providers (at most ${cap} of its ${n} shards on one)`, shardsPerProvider: worst, ...empty };
  }
  const share = n / P;
  const rows = providers.map((p) => ({ name: p.name, share, storedGB: (w.storedGB * share) / k, storage: 0, egress: 0, requests: 0 }));
  rows.forEach((r, i) => {
    const price = providers[i]!.prices;
    r.storage = r.storedGB * price.storagePerGBMonth;
    r.requests = (w.putsPerMonth * share * price.putPer1000) / 1000;
  });
  // Reads: the k cheapest shards of each object. Which providers hold the extra shard of an
  // object (k+m not divisible by P) varies from object to object: average over every choice.
  const order = providers
    .map((_, i) => i)
    .sort((a, b) => {
      const pa = providers[a]!.prices,
        pb = providers[b]!.prices;
      return pa.egressPerGB - pb.egressPerGB || pa.getPer1000 - pb.getPer1000 || a - b;
    });
  const layouts = extraShardLayouts(P, n % P);
  for (const extra of layouts) {
    let left = k;
    for (const i of order) {
      const taken = Math.min(Math.floor(n / P) + (extra & (1 << i) ? 1 : 0), left);
      left -= taken;
      const price = providers[i]!.prices;
      rows[i]!.egress += ((w.readGBPerMonth / k) * taken * price.egressPerGB) / layouts.length;
      rows[i]!.requests += (w.getsPerMonth * taken * price.getPer1000) / 1000 / layouts.length;
    }
  }
  const sum = (f: (r: (typeof rows)[number]) => number) => rows.reduce((s, r) => s + f(r), 0);
  const storage = sum((r) => r.storage),
    egress = sum((r) => r.egress),
    requests = sum((r) => r.requests);
  return {
    scheme,
    feasible: true,
    shardsPerProvider: worst,
    storedGB: sum((r) => r.storedGB),
    storage,
    egress,
    requests,
    total: storage + egress + requests,
    survives: tolerated(worst, m),
    providers: rows,
  };
}

/** Every way to choose the `r` of `P` providers that hold one shard more, as bit masks. */
function extraShardLayouts(P: number, r: number): number[] {
  const out: number[] = [];
  for (let mask = 0; mask < 1 << P; mask++) {
    let bits = 0;
    for (let x = mask; x; x &= x - 1) bits++;
    if (bits === r) out.push(mask);
  }
  return out;
}

/** "replicate-3", "rep3", "4+2" -> a scheme; null if it is neither. */
export function parseScheme(text: string): Scheme | null {
  const rep = /^(?:replicate-|rep)(\d+)$/.exec(text);
  if (rep) return Number(rep[1]) >= 1 ? { name: `replicate-${rep[1]}`, k: 1, m: Number(rep[1]) - 1 } : null;
  const ec = /^(\d+)\+(\d+)$/.exec(text);
  if (ec && Number(ec[1]) >= 1) return { name: `${Number(ec[1])}+${Number(ec[2])}`, k: Number(ec[1]), m: Number(ec[2]) };
  return null;
}
