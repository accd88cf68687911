/**
 * Repair: rebuilds lost or rotten shards of one unit from k good ones and writes them back to
 * their recorded backends under the same keys, byte for byte what the writer produced (same
 * header but the shard index, same block checksums, same footer). The shard digests in the
 * footer check the result before anything is written. `runRepair` is the repair queue's work:
 * one RepairTask, triaged, repaired and recorded in the catalog.
 */
import type { Backend } from '../../backends/types.ts';
import type { UpkeepCatalog } from '../catalog/types.ts';
import type { RepairTask } from '../engine/ec-store.ts';
import { createCoder } from '../../coder-wasm/index.ts';
import { blockSeed, encodeFooter, encodeHeader, footerOfShard, unitSalt, type ShardFooter, type ShardHeader } from '../format/shard-file.ts';
import { BLOCK_CHECKSUM_BYTES, shardLayout } from '../format/layout.ts';
import { shardKey, type CodedUnit } from '../format/manifest.ts';
import { probeShardSize, readShardFile, type ShardFileInfo } from '../engine/shard-files.ts';
import { RowDecoder } from '../engine/row-decoder.ts';
import { ShardReadError } from '../engine/shard-reader.ts';
import { ShardSink } from '../engine/shard-sink.ts';
import { MAX_OPEN_SUBREQUESTS, Semaphore } from '../engine/subrequests.ts';
import { QuorumError, checksumBytes, digestOf } from '../engine/unit-writer.ts';

export interface RepairDeps {
  catalog: UpkeepCatalog;
  backends: Map<string, Backend>;
}

/**
 * Repairs one task: finds the unit by its id in the unit index (whatever object version holds it;
 * a unit no longer stored needs nothing), rewrites the shards that need it and records them
 * repaired; throws (the queue retries later) while some shard's backend is still unreachable or
 * a rewrite failed.
 */
export async function runRepair(task: RepairTask, deps: RepairDeps): Promise<void> {
  const found = await deps.catalog.getUnit(task.bucket, task.unitId);
  if (!found) return;
  const { unit, key } = found;
  const { now, later } = await triageTargets(task.bucket, unit, task.shards, task.reason.kind === 'unavailable', deps.backends);
  const fine = task.shards.filter((t) => !now.includes(t) && !later.includes(t));
  const result = now.length ? await repairUnit(task.bucket, unit, now, deps.backends) : { repaired: [], failed: [] };
  const repaired = [...fine, ...result.repaired].filter((t) => unit.missing.includes(t));
  if (repaired.length) await deps.catalog.markRepaired(task.bucket, unit.unitId, repaired);
  if (result.failed.length || later.length) {
    // Named by backend: what an operator reads on the worklist (`shardgate repair --list`).
    const why = [
      ...later.map((t) => `shard ${t} on ${unit.placement[t]}: backend unreachable`),
      ...result.failed.map((f) => `shard ${f.shard} on ${unit.placement[f.shard]}: ${f.error}`),
    ];
    throw new Error(`repair of ${task.bucket}/${key} unit ${task.unitId}: ${why.join('; ')}`);
  }
}

export interface RepairResult {
  repaired: number[];
  failed: { shard: number; error: string }[];
}

/**
 * Which reported shards to rewrite now, before any byte is written: a shard reported only
 * unreachable (`transient`) that is back with its full length is left alone (rewriting it would
 * cost a whole shard, and on a backend without atomic PUTs an interrupted rewrite would destroy a
 * good copy); a shard whose backend still does not answer waits (`later`). Missing, short or
 * rotten shards are rewritten.
 */
export async function triageTargets(bucket: string, unit: CodedUnit, targets: number[], transient: boolean, backends: Map<string, Backend>): Promise<{ now: number[]; later: number[] }> {
  const now: number[] = [], later: number[] = [];
  const slots = new Semaphore(MAX_OPEN_SUBREQUESTS);
  await Promise.all(targets.map(async (t) => {
    const state = await slots.run(() => probeShardSize(backends.get(unit.placement[t]!), bucket, unit, t));
    if (state === 'unreachable') later.push(t);
    else if (state === 'damaged' || !transient) now.push(t);
  }));
  return { now: now.sort((a, b) => a - b), later: later.sort((a, b) => a - b) };
}

/** Bytes of source blocks a repair of a wide unit drains per round (k blocks per row). */
const ROUND_BYTES = 8 * 1024 * 1024;

/**
 * Rebuilds shards `targets` of a unit, row by row: each row's block of k good shards (data first)
 * is read and checked, the targets' blocks reconstructed, framed and streamed to their backends.
 * When the k sources and the targets cannot all stream at once within the 6 open subrequests
 * (wide codes), rows go in rounds: each source's blocks of a round are read (drained) one source
 * at a time, so memory is a round (ROUND_BYTES), not a shard.
 */
export async function repairUnit(bucket: string, unit: CodedUnit, targets: number[], backends: Map<string, Backend>): Promise<RepairResult> {
  if (targets.length >= MAX_OPEN_SUBREQUESTS) {
    // Each rebuilt shard holds a subrequest slot for its whole upload: rebuild a few at a time.
    const first = await repairUnit(bucket, unit, targets.slice(0, MAX_OPEN_SUBREQUESTS - 1), backends);
    const rest = await repairUnit(bucket, unit, targets.slice(MAX_OPEN_SUBREQUESTS - 1), backends);
    return { repaired: [...first.repaired, ...rest.repaired], failed: [...first.failed, ...rest.failed] };
  }
  const replica = unit.codec === 'replica';
  const bad = new Set(targets);
  const backendOf = (i: number) => {
    const b = backends.get(unit.placement[i]!);
    if (!b) throw new ShardReadError(i, 'unavailable', `backend ${unit.placement[i]} is not configured`);
    return b;
  };
  // The header of any good shard (headers differ only by the shard index); a complete footer
  // (every striped shard has one; of a column unit, the last data shard and the parity shards).
  const { header, footer } = await sourceFiles(bucket, unit, bad, backendOf);
  const layouts = unit.headerLens.map((_, i) => shardLayout(unit, i));
  const rows = layouts[0]!.stripes;
  const slots = new Semaphore(MAX_OPEN_SUBREQUESTS);
  const decoder = new RowDecoder({
    bucket, unit, backends, bad, lastRow: rows - 1, slots, reservedSlots: targets.length,
    rowsPerRound: Math.max(1, Math.floor(ROUND_BYTES / (unit.k * unit.blockSize))),
  });
  const coder = createCoder(unit.k, replica ? 0 : unit.m);
  const stripe = coder.stripe(unit.blockSize);
  const abort = new AbortController();
  const sums = new Map<number, bigint[]>(targets.map((t) => [t, []]));
  const headers = targets.map((t) => encodeHeader({ ...header, shardIndex: t }));
  headers.forEach((h, j) => {
    if (h.length !== unit.headerLens[targets[j]!]) throw new Error(`unit ${unit.unitId}: rebuilt header of shard ${targets[j]} has another length`);
  });
  const sinks = targets.map((t) => {
    const key = shardKey(bucket, unit.unitId, t), len = layouts[t]!.shardFileLen();
    return new ShardSink(t, backendOf(t), key, len, abort.signal, BLOCK_CHECKSUM_BYTES + unit.blockSize, (upload) => slots.run(upload));
  });
  const salt = unitSalt(unit.unitId);
  try {
    await Promise.all(sinks.map((sink, j) => sink.write(() => [headers[j]!])));
    for (let s = 0; s < rows; s++) {
      await decoder.decodeRow(s, stripe, false);
      const len = layouts[0]!.blockLen(s);
      await Promise.all(sinks.map((sink) => {
        const src = replica ? 0 : sink.shardIndex;
        const sum = stripe.xxh64(src, 0, len, blockSeed(salt, s, sink.shardIndex));
        sums.get(sink.shardIndex)!.push(sum);
        return sink.write(() => [checksumBytes(sum), stripe.shard(src).subarray(0, len)]);
      }));
    }
    for (const sink of sinks) {
      const digest = digestOf(sums.get(sink.shardIndex)!, sink.shardIndex);
      if (digest !== footer.shardDigests[sink.shardIndex]) {
        sink.abort(new Error(`shard ${sink.shardIndex}: rebuilt digest differs from the footer's`));
      } else {
        const bytes = encodeFooter(footerOfShard(footer, unit, sink.shardIndex));
        await sink.write(() => [bytes]);
      }
    }
    const done = await Promise.all(sinks.map((s) => s.close()));
    return {
      repaired: sinks.filter((_, i) => done[i]).map((s) => s.shardIndex),
      failed: sinks.filter((_, i) => !done[i]).map((s) => ({ shard: s.shardIndex, error: String((s.failure as Error)?.message ?? s.failure) })),
    };
  } catch (err) {
    abort.abort(err);
    sinks.forEach((s) => s.abort(err));
    throw err;
  } finally {
    decoder.release();
    stripe.free();
    coder.free();
  }
}

/** A good shard's header, and a complete footer, read from the shards not being rebuilt. */
async function sourceFiles(bucket: string, unit: CodedUnit, bad: Set<number>, backendOf: (i: number) => Backend): Promise<{ header: ShardHeader; footer: ShardFooter }> {
  let header: ShardHeader | null = null;
  // Complete footers first: the last data shard and the parity shards, then the others.
  const order = [...Array(unit.k + unit.m).keys()].sort((a, b) => Number(b >= unit.k - 1) - Number(a >= unit.k - 1));
  for (const i of order) {
    if (bad.has(i)) continue;
    const info: ShardFileInfo | null = await readShardFile(backendOf(i), shardKey(bucket, unit.unitId, i)).catch(() => null);
    if (!info) continue;
    header ??= info.header;
    if (!info.footer.partial) return { header, footer: info.footer };
  }
  throw new QuorumError(`no readable shard of unit ${unit.unitId} with a complete footer to repair from`, []);
}
