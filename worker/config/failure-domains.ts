/**
 * How independent a config's failure domains are, per policy: what the deployment review
 * (deployment.ts) refuses or warns about, naming the policy and the domains.
 * - Refused: a policy whose k+m shards cannot be placed with at most max(1, m) per domain
 *   (engine/placement.ts's rule): all backends in one domain, or more than m shards of every
 *   object forced into one. Every write of that policy would fail there, and the data it would
 *   hold could not survive the loss of that domain.
 * - Warned: a domain that must hold several shards of an object (fewer domains than shards: the
 *   pool survives fewer domain losses than m); more than m shards able to land on R2 bindings,
 *   which all live in the Worker's one Cloudflare account; m = 0 (no shard may be lost).
 * Small objects stored as replicas are reviewed as a policy of their own. A policy with a pool
 * (`backends`) is reviewed over its pool's backends only: those are the domains its shards get.
 * Known gap: a domain label is the operator's word: two labels on one provider account are
 * taken as independent (except R2 bindings, which are one account by construction).
 */
import { placeableShards, type StoragePolicy } from '../engine/index.ts';

export interface DomainFindings {
  refusals: string[];
  warnings: string[];
}

interface Geometry {
  label: string;
  k: number;
  m: number;
  /** The policy's pool (absent: every backend reviewed). */
  pool?: string[];
}

export function reviewFailureDomains(all: readonly { id: string; kind: string; domain: string }[], policies: Record<string, StoragePolicy>): DomainFindings {
  const out: DomainFindings = { refusals: [], warnings: [] };
  for (const g of geometries(policies)) {
    const pool = g.pool;
    const backends = pool ? all.filter((b) => pool.includes(b.id)) : all;
    const perDomain = new Map<string, number>();
    for (const b of backends) perDomain.set(b.domain, (perDomain.get(b.domain) ?? 0) + 1);
    const domainList = [...perDomain].map(([d, n]) => `${d} (${n} backend${n > 1 ? 's' : ''})`).join(', ');
    const r2 = backends.filter((b) => b.kind === 'r2');
    const n = g.k + g.m,
      cap = Math.max(1, g.m);
    if (placeableShards(backends, g.m) < n) {
      out.refusals.push(
        perDomain.size === 1
          ? `${g.label}: all ${backends.length} backends are in one failure domain, ${[...perDomain.keys()][0]}: losing it loses every object, and placement puts at most ${cap} of the ${n} shards in one domain, so every write would fail. Give backends in other domains (provider/region/account).`
          : `${g.label} needs its ${n} shards spread at most ${cap} per failure domain, more than these domains can hold: ${domainList}. Every write would fail, and more than m=${g.m} shards would share a domain. Add backends in other domains or lower k+m.`,
      );
      continue;
    }
    const spread = spreadOver([...perDomain.values()], n, cap);
    if (spread[0]! > 1) {
      out.warnings.push(
        `${g.label}: ${n} shards over ${perDomain.size} failure domains (${domainList}): up to ${spread[0]} shards of an object share a domain, so it survives the loss of ${tolerated(spread, g.m)} domain(s), not ${g.m}.`,
      );
    }
    const onR2 = Math.min(n, placeableShards(r2, g.m));
    if (onR2 > g.m && g.m > 0) {
      out.warnings.push(
        `${g.label}: up to ${onR2} of its ${n} shards can land on R2 bindings (${r2.map((b) => b.id).join(', ')}), which all live in this Worker's one Cloudflare account: an account-wide failure (suspension, billing, a bucket deleted by mistake) would lose more than m=${g.m}. Use at most ${g.m} R2 buckets here, or give them one domain label (such as "cloudflare/ACCOUNT") so that placement keeps at most ${Math.max(1, g.m)} shards there.`,
      );
    }
    if (g.m === 0) out.warnings.push(`${g.label}: m=0, no shard may be lost: any backend failure makes its objects unreadable.`);
  }
  return out;
}

function geometries(policies: Record<string, StoragePolicy>): Geometry[] {
  const out: Geometry[] = [];
  for (const p of Object.values(policies)) {
    const pool = p.backends ? { pool: p.backends } : {};
    out.push({ label: `policy "${p.name}" (${p.codec === 'replica' ? `${p.k + p.m} replicas` : `${p.k}+${p.m}`})`, k: p.k, m: p.m, ...pool });
    if (p.small.mode === 'replicate' && p.small.threshold > 0)
      out.push({ label: `policy "${p.name}" small objects (${p.small.replicas} replicas)`, k: 1, m: p.small.replicas - 1, ...pool });
  }
  return out;
}

/** Shards per domain, most first, as placement's rounds deal them: one per domain per round, at most `cap`. */
function spreadOver(backendsPerDomain: number[], n: number, cap: number): number[] {
  const used = backendsPerDomain.map(() => 0);
  let placed = 0;
  for (let round = 0; placed < n && round < n; round++) {
    for (let d = 0; d < used.length && placed < n; d++) {
      if (used[d]! <= round && used[d]! < Math.min(cap, backendsPerDomain[d]!)) used[d]!++, placed++;
    }
  }
  return used.filter((u) => u > 0).sort((a, b) => b - a);
}

/**
 * Domains that may be lost, worst case: `spread` is shards per domain, fullest first; losing
 * domains in that order, how many go before more than m shards of an object are lost.
 */
export function tolerated(spread: number[], m: number): number {
  let lost = 0,
    f = 0;
  for (const s of spread) {
    if (lost + s > m) break;
    lost += s;
    f++;
  }
  return f;
}
