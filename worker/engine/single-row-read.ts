/**
 * A read of a column unit that has a single row (every small object of a wide code): the data
 * blocks the range needs are fetched in one parallel round (at most 6 open, Workers' limit), and
 * for each that fails, or that the cost plan avoids, one more shard is fetched (data first, then
 * parity by the caller's preference) in the next round, until k good blocks rebuild the rest.
 * So a healthy read makes one GET per needed data shard, a degraded one k+1 with one shard down
 * and k+2 with two (a range needing fewer data shards: fewer).
 *
 * Memory: the blocks are the readers' own buffers (no copy), at most k+m of one block each, which
 * the read's budget already covers ((k+m) x blockSize of stripe memory); a decode asks `grow` for
 * its stripe and gives it back before returning. Every reader is cancelled once its block is in.
 * Fewer than k good shards is QuorumError, never wrong bytes; each shard found bad is reported once.
 */
import { createCoder } from '../../coder-wasm/index.ts';
import { shardKey } from '../format/shard-key.ts';
import { unitSalt } from '../format/shard-file.ts';
import { shardLayout } from '../format/layout.ts';
import { QuorumError } from './shard-set.ts';
import { ShardReadError, ShardReader } from './shard-reader.ts';
import { MAX_OPEN_SUBREQUESTS, Semaphore } from './subrequests.ts';
import type { ReadUnitInput } from './unit-reader.ts';

/** A piece of a column read: data shard `shard`, rows `from`..`to`, bytes [lo, hi) of the shard's data. */
export interface Span {
  shard: number;
  lo: number;
  hi: number;
  from: number;
  to: number;
}

export interface SingleRowInput extends ReadUnitInput {
  spans: Span[];
  /** Shards never to read; failed ones are added. */
  bad: Set<number>;
  /** Data shards to rebuild rather than read (priced backends). */
  avoid?: Set<number>;
  /** Every shard, in the order extra ones are taken. */
  preference: number[];
}

/** The requested bytes of the row, in order. */
export async function readSingleRow(input: SingleRowInput): Promise<Uint8Array[]> {
  const { unit, spans, bad, avoid } = input;
  const { k, m } = unit;
  const salt = unitSalt(unit.unitId);
  const slots = new Semaphore(MAX_OPEN_SUBREQUESTS);
  const blocks = new Map<number, Uint8Array>();
  const fetch = (i: number) =>
    slots.run(async () => {
      const b = input.backends.get(unit.placement[i]!);
      const reader = b ? new ShardReader(i, b, shardKey(input.bucket, unit.unitId, i), shardLayout(unit, i), 0, 0, salt, input.latency) : null;
      try {
        if (!reader) throw new ShardReadError(i, 'unavailable', `backend ${unit.placement[i]} is not configured`);
        blocks.set(i, await reader.readBlock(0));
      } catch (err) {
        if (!(err instanceof ShardReadError)) throw err;
        bad.add(i);
        input.onUnhealthy?.(err);
      } finally {
        reader?.cancel();
      }
    });
  const wanted = spans.map((s) => s.shard);
  const lost = (i: number) => bad.has(i) || (avoid?.has(i) ?? false);
  await Promise.all(wanted.filter((i) => !lost(i)).map(fetch));
  for (;;) {
    const missing = wanted.filter((i) => !blocks.has(i));
    if (missing.length === 0 || blocks.size >= k) break;
    const unread = (i: number) => !bad.has(i) && !blocks.has(i) && !missing.includes(i);
    // Shards the plan avoids come last: only when nothing else is left.
    const more = [...input.preference.filter((i) => unread(i) && !avoid?.has(i)), ...input.preference.filter((i) => unread(i) && avoid?.has(i))].slice(
      0,
      k - blocks.size,
    );
    if (more.length < k - blocks.size) {
      throw new QuorumError(`only ${blocks.size + more.length} of ${k + m} shards of unit ${unit.unitId} are readable; ${k} needed`, []);
    }
    await Promise.all(more.map(fetch));
  }
  const missing = wanted.filter((i) => !blocks.has(i));
  if (missing.length) await rebuild(input, blocks, missing);
  return spans.map((s) => blocks.get(s.shard)!.subarray(s.lo, s.hi));
}

/** Puts the `missing` data blocks into `blocks`, decoded from k of the blocks in hand. */
async function rebuild(input: SingleRowInput, blocks: Map<number, Uint8Array>, missing: number[]): Promise<void> {
  const { k, m } = input.unit;
  const len = shardLayout(input.unit, 0).blockLen(0);
  const giveBack = input.grow ? await input.grow((k + m) * len) : () => {};
  const coder = createCoder(k, m);
  const stripe = coder.stripe(len);
  try {
    const sources = [...blocks.keys()].slice(0, k);
    for (const i of sources) stripe.shard(i).set(blocks.get(i)!);
    stripe.reconstruct(
      [...Array(k + m).keys()].map((i) => sources.includes(i)),
      { dataOnly: true },
    );
    for (const i of missing) blocks.set(i, stripe.shard(i).slice());
  } finally {
    stripe.free();
    coder.free();
    giveBack();
  }
}
