/**
 * Who runs a bucket's mover chain (issue 26; upkeep/move-chain.ts): the chain's id and when its
 * last link claimed the bucket, kept as the `chain` field of the bucket's 'drain' state row
 * (upkeep progress: not journaled, and a rebuilt catalog starts the work afresh). A claim is a
 * compare-and-set inside the bucket's Durable Object, so two chains never both own a bucket: a
 * chain owns it while its last claim is younger than `staleMs`; after that (a link lost with its
 * isolate, a queue that stopped delivering) the next chain to claim takes it over, and the old
 * one, if it comes back, finds the bucket taken and stops.
 */
export interface ChainClaim {
  id: string;
  /** ms since the epoch of the owner's last claim. */
  at: number;
}

type Row = Record<string, unknown> & { chain?: ChainClaim };

const parse = (row: string | null): Row => (row === null ? {} : (JSON.parse(row) as Row));

/** Claims the bucket for `chain` at `now`: `owned` false (and the row unchanged) while another chain's claim is fresh. */
export function claimChain(row: string | null, chain: string, now: number, staleMs: number): { owned: boolean; row: string | null } {
  const r = parse(row);
  if (r.chain && r.chain.id !== chain && now - r.chain.at < staleMs) return { owned: false, row };
  return { owned: true, row: JSON.stringify({ ...r, chain: { id: chain, at: now } }) };
}

/** The row without `chain`'s claim (unchanged if another chain holds it). */
export function endChain(row: string | null, chain: string): string | null {
  const r = parse(row);
  if (r.chain?.id !== chain) return row;
  delete r.chain;
  return JSON.stringify(r);
}
