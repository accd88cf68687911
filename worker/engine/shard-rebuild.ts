/**
 * Shard rebuild: rewrites lost or rotten shards of one unit from k good ones, to their recorded
 * backends under the same keys, byte for byte what the writer produced (the header of a good
 * shard with the shard index changed, the same block checksums, the same footer): the framing
 * is the format's one writer (format/shard-file-writer.ts). The shard digests of a complete
 * footer read from a good shard check each rebuilt shard before its footer is written; a shard
 * that does not match is not stored. Repair (upkeep/repair.ts) decides what to rebuild and
 * records the result.
 */
import type { Backend } from '../../backends/types.ts';
import { createCoder } from '../../coder-wasm/index.ts';
import type { CodedUnit } from '../format/manifest.ts';
import { shardKey } from '../format/shard-key.ts';
import type { ShardFooter, ShardHeader } from '../format/shard-file.ts';
import { ShardFileWriter } from '../format/shard-file-writer.ts';
import { BLOCK_CHECKSUM_BYTES } from '../format/layout.ts';
import { readShardFile, type ShardFileInfo } from './shard-files.ts';
import { RowDecoder } from './row-decoder.ts';
import { QuorumError } from './shard-set.ts';
import { ShardReadError } from './shard-reader.ts';
import { ShardSink } from './shard-sink.ts';
import { MAX_OPEN_SUBREQUESTS, Semaphore } from './subrequests.ts';

/** Which targets were rebuilt and stored, and why the others were not. */
export interface RebuildResult {
  repaired: number[];
  failed: { shard: number; error: string }[];
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
export async function rebuildShards(bucket: string, unit: CodedUnit, targets: number[], backends: Map<string, Backend>): Promise<RebuildResult> {
  if (targets.length >= MAX_OPEN_SUBREQUESTS) {
    // Each rebuilt shard holds a subrequest slot for its whole upload: rebuild a few at a time.
    const first = await rebuildShards(bucket, unit, targets.slice(0, MAX_OPEN_SUBREQUESTS - 1), backends);
    const rest = await rebuildShards(bucket, unit, targets.slice(MAX_OPEN_SUBREQUESTS - 1), backends);
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
  const slots = new Semaphore(MAX_OPEN_SUBREQUESTS);
  const abort = new AbortController();
  // Each target's file: the good header with its own index (so its length must be the recorded one).
  const files = targets.map((t) => {
    const backend = backendOf(t);
    let sink: ShardSink | null = null;
    const file = new ShardFileWriter({ ...header, shardIndex: t }, { write: (parts) => sink!.write(parts) });
    if (file.headerBytes.length !== unit.headerLens[t]) throw new Error(`unit ${unit.unitId}: rebuilt header of shard ${t} has another length`);
    sink = new ShardSink(t, backend, shardKey(bucket, unit.unitId, t), file.fileLen, abort.signal, BLOCK_CHECKSUM_BYTES + unit.blockSize, (upload) =>
      slots.run(upload),
    );
    return { file, sink };
  });
  const rows = files[0]!.file.layout.stripes;
  const decoder = new RowDecoder({
    bucket,
    unit,
    backends,
    bad,
    lastRow: rows - 1,
    slots,
    reservedSlots: targets.length,
    rowsPerRound: Math.max(1, Math.floor(ROUND_BYTES / (unit.k * unit.blockSize))),
  });
  const coder = createCoder(unit.k, replica ? 0 : unit.m);
  const stripe = coder.stripe(unit.blockSize);
  const sinks = files.map((f) => f.sink);
  try {
    for (let s = 0; s < rows; s++) {
      await decoder.decodeRow(s, stripe, false);
      // The uploads open at their first write: only once the first row could be decoded, so a
      // repair that finds fewer than k readable shards (a backend down, another slow) opens none.
      // (An upload aborted mid-body makes workerd log an uncaught rejection: one per failed try.)
      if (s === 0) await Promise.all(files.map(({ file }) => file.writeHeader()));
      const len = files[0]!.file.layout.blockLen(s);
      await Promise.all(
        files.map(({ file }) => {
          const src = replica ? 0 : file.shardIndex;
          return file.block(
            s,
            (seed) => stripe.xxh64(src, 0, len, seed),
            () => stripe.shard(src).subarray(0, len),
          );
        }),
      );
    }
    if (rows === 0) await Promise.all(files.map(({ file }) => file.writeHeader()));
    for (const { file, sink } of files) {
      if (file.digest() !== footer.shardDigests[file.shardIndex]) sink.abort(new Error(`shard ${file.shardIndex}: rebuilt digest differs from the footer's`));
      else await file.writeFooter(footer);
    }
    const done = await Promise.all(sinks.map((s) => s.close()));
    return {
      repaired: sinks.filter((_, i) => done[i]).map((s) => s.shardIndex),
      failed: sinks.filter((_, i) => !done[i]).map((s) => ({ shard: s.shardIndex, error: String((s.failure as Error)?.message ?? s.failure) })),
    };
  } catch (err) {
    abort.abort(err);
    sinks.forEach((s) => s.abort(err));
    // The sinks are not awaited: the failure is reported at once, and each upload ends on its own
    // (the signal above). Awaiting them here was tried: one repair never ended under a loaded run.
    throw err;
  } finally {
    decoder.release();
    stripe.free();
    coder.free();
  }
}

/** A good shard's header, and a complete footer, read from the shards not being rebuilt. */
async function sourceFiles(
  bucket: string,
  unit: CodedUnit,
  bad: Set<number>,
  backendOf: (i: number) => Backend,
): Promise<{ header: ShardHeader; footer: ShardFooter }> {
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
