/**
 * Redundancy left, per policy, in units and in bytes (issue 27): every stored unit of a bucket,
 * whole or not, counted by its policy (its k+m geometry, e.g. "4+2") and by how many shards it
 * still has, from k+m (whole) down to k (one more loss loses it) and below k (lost), like Ceph's
 * placement-group states. The ledger keeps one count per (policy, shards missing) inside every
 * commit, delete and repair mark (usage.ts adds the entries), so reading them is a few rows, and
 * the units of every policy and state sum to the bucket's units.
 */
import type { CodedUnit } from '../format/manifest.ts';
import { policyName, type PolicyRedundancy, type UnitsAndBytes } from './ledger-figures.ts';

export { policyName, type PolicyRedundancy, type UnitsAndBytes };

const UNITS = 'units:';
const BYTES = 'unit-bytes:';

/** The ledger entries a stored unit accounts for: one unit, and its bytes, under its policy and shards missing. */
export function redundancyEntries(u: Pick<CodedUnit, 'k' | 'm' | 'size' | 'missing'>): [string, number][] {
  const at = `${policyName(u)}:${u.missing.length}`;
  return [
    [UNITS + at, 1],
    [BYTES + at, u.size],
  ];
}

/** An empty ladder for policy k+m. */
export function emptyPolicy(k: number, m: number): PolicyRedundancy {
  return { k, m, byShardsLeft: Array.from({ length: m + 1 }, (_, i) => ({ shardsLeft: k + m - i, units: 0, bytes: 0 })), belowK: { units: 0, bytes: 0 } };
}

/** Adds `n` units or bytes (`what`) of policy k+m missing `missing` shards to `out`. */
function add(out: Record<string, PolicyRedundancy>, k: number, m: number, missing: number, what: keyof UnitsAndBytes, n: number): void {
  const p = (out[`${k}+${m}`] ??= emptyPolicy(k, m));
  const slot = missing > m ? p.belowK : p.byShardsLeft[missing]!;
  slot[what] += n;
}

/** Per policy, from the ledger's entries (name -> value); entries of other kinds are ignored. */
export function redundancyFromLedger(entries: Iterable<[string, number]>): Record<string, PolicyRedundancy> {
  const out: Record<string, PolicyRedundancy> = {};
  for (const [name, value] of entries) {
    const m = /^(units|unit-bytes):(\d+)\+(\d+):(\d+)$/.exec(name);
    if (!m || value === 0) continue;
    add(out, Number(m[2]), Number(m[3]), Number(m[4]), m[1] === 'units' ? 'units' : 'bytes', value);
  }
  return out;
}

/** The sum of several buckets' counts, per policy. */
export function sumRedundancy(all: readonly Record<string, PolicyRedundancy>[]): Record<string, PolicyRedundancy> {
  const out: Record<string, PolicyRedundancy> = {};
  for (const byPolicy of all) {
    for (const p of Object.values(byPolicy)) {
      p.byShardsLeft.forEach((s, missing) => {
        add(out, p.k, p.m, missing, 'units', s.units);
        add(out, p.k, p.m, missing, 'bytes', s.bytes);
      });
      add(out, p.k, p.m, p.m + 1, 'units', p.belowK.units);
      add(out, p.k, p.m, p.m + 1, 'bytes', p.belowK.bytes);
    }
  }
  return out;
}

/** Bytes in units with exactly k shards left (at risk) and fewer (lost), over every policy. */
export function bytesAtRiskAndLost(byPolicy: Record<string, PolicyRedundancy>): { atRiskBytes: number; lostBytes: number } {
  const ps = Object.values(byPolicy);
  // A policy without parity (m=0) is at exactly k when whole: at risk counts damage only, as the worklist does.
  return { atRiskBytes: ps.reduce((n, p) => n + (p.m > 0 ? p.byShardsLeft[p.m]!.bytes : 0), 0), lostBytes: ps.reduce((n, p) => n + p.belowK.bytes, 0) };
}

/** One row of the ladder: a policy's units and bytes with `shardsLeft` shards ("below_k": fewer than k). */
export interface RedundancyRow extends UnitsAndBytes {
  policy: string;
  shardsLeft: string;
}

/** The ladders as rows, policies by name, each from whole down to below k: what tables and metrics list. */
export function redundancyRows(byPolicy: Record<string, PolicyRedundancy>): RedundancyRow[] {
  return Object.entries(byPolicy)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .flatMap(([policy, p]) => [
      ...p.byShardsLeft.map((s) => ({ policy, shardsLeft: String(s.shardsLeft), units: s.units, bytes: s.bytes })),
      { policy, shardsLeft: 'below_k', ...p.belowK },
    ]);
}
