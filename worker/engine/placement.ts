/**
 * ShardPlacement: which backend holds each of an object's k+m shards. Rendezvous (highest random
 * weight) hashing over the object's name: adding a backend moves only the shards it now wins.
 * Failure domains: at most one shard per domain while distinct domains remain, and never more
 * than m shards in one domain (losing a whole domain then never costs more than m shards).
 * The result is recorded in the manifest and never recomputed at read time.
 */
import type { Backend } from '../../backends/types.ts';
import { checksums } from '../../coder-wasm/index.ts';

const utf8 = new TextEncoder();

export class PlacementError extends Error {
  override readonly name = 'PlacementError';
}

/** Each backend id's seed (the XXH64 of its id), once per isolate: ids are the config's, few. */
const idSeeds = new Map<string, bigint>();

function score(name: Uint8Array, backendId: string): bigint {
  let seed = idSeeds.get(backendId);
  if (seed === undefined) idSeeds.set(backendId, (seed = checksums().xxh64(utf8.encode(backendId))));
  return checksums().xxh64(name, seed);
}

/** `backends` by rendezvous score for `key`, highest first; each scored once (not per comparison). */
function rankedFor<B extends Pick<Backend, 'id'>>(key: Uint8Array, backends: readonly B[]): B[] {
  return backends
    .map((b) => ({ b, s: score(key, b.id) }))
    .sort((x, y) => (y.s > x.s ? 1 : y.s < x.s ? -1 : 0))
    .map((x) => x.b);
}

/** Backends for shards 0..k+m-1 of the object called `name` (bucket + key). */
export function placeShards<B extends Pick<Backend, 'id' | 'domain'>>(name: string, backends: readonly B[], k: number, m: number): B[] {
  const n = k + m;
  if (backends.length < n) throw new PlacementError(`a ${k}+${m} policy needs ${n} backends; ${backends.length} are configured`);
  const key = utf8.encode(name);
  const ranked = rankedFor(key, backends);
  const chosen: B[] = [];
  const perDomain = new Map<string, number>();
  // Round r admits a backend whose domain holds at most r shards already: round 0 spreads one
  // per domain, later rounds fill up, never past m per domain.
  for (let round = 0; chosen.length < n && round < n; round++) {
    for (const b of ranked) {
      if (chosen.length === n) break;
      const used = perDomain.get(b.domain) ?? 0;
      if (chosen.includes(b) || used > round || used >= Math.max(1, m)) continue;
      chosen.push(b);
      perDomain.set(b.domain, used + 1);
    }
  }
  if (chosen.length < n) {
    throw new PlacementError(
      `cannot place ${n} shards with at most ${Math.max(1, m)} per failure domain over domains ${[...new Set(backends.map((b) => b.domain))].join(', ')}`,
    );
  }
  return chosen;
}

/**
 * How many shards placement can put on `backends` for a policy with m parity shards, keeping to
 * its rule of at most max(1, m) per domain: below k+m, every write of that policy fails. The
 * deployment review (worker/config/deployment.ts) uses it to refuse such a config before any write.
 */
export function placeableShards(backends: readonly { domain: string }[], m: number): number {
  const perDomain = new Map<string, number>();
  for (const b of backends) perDomain.set(b.domain, (perDomain.get(b.domain) ?? 0) + 1);
  let total = 0;
  for (const count of perDomain.values()) total += Math.min(count, Math.max(1, m));
  return total;
}

/**
 * Where a moved shard goes (the mover, upkeep/drain.ts): the backend among `candidates` (active
 * ones) that the unit's placement rules admit for shard `shard` given where its other shards are,
 * highest rendezvous score for `name` first, as placeShards would rank them. A domain that holds
 * none of the unit's other shards is preferred; one that would then hold more than max(1, m) is
 * never chosen. Null: no candidate keeps the rules (the drain waits for another backend).
 */
export function replacementBackend<B extends Pick<Backend, 'id' | 'domain'>>(
  name: string,
  placement: readonly string[],
  shard: number,
  candidates: readonly B[],
  domainOf: (id: string) => string | undefined,
  m: number,
): B | null {
  const perDomain = new Map<string, number>();
  placement.forEach((id, i) => {
    if (i === shard) return;
    const d = domainOf(id) ?? `unknown:${id}`;
    perDomain.set(d, (perDomain.get(d) ?? 0) + 1);
  });
  const key = utf8.encode(name);
  const open = candidates.filter((b) => !placement.includes(b.id) && (perDomain.get(b.domain) ?? 0) < Math.max(1, m));
  if (!open.length) return null;
  const ranked = open.map((b) => ({ b, used: perDomain.get(b.domain) ?? 0, s: score(key, b.id) }));
  ranked.sort((x, y) => x.used - y.used || (y.s > x.s ? 1 : y.s < x.s ? -1 : 0));
  return ranked[0]!.b;
}
