/**
 * Repair: rebuilds lost or rotten shards of one unit from k good ones and writes them back to
 * their recorded backends under the same keys, byte for byte what the writer produced (same
 * header but the shard index, same block checksums, same footer). The shard digests in the
 * footer check the result before anything is written. `runRepair` is the repair queue's work:
 * one RepairTask, triaged, repaired and recorded in the catalog.
 */
import type { Backend } from '../../backends/types.ts';
import type { Catalog } from '../catalog/types.ts';
import type { RepairTask } from '../engine/ec-store.ts';
import { createCoder } from '../../coder-wasm/index.ts';
import { blockSeed, encodeHeader, unitSalt } from '../engine/format.ts';
import { BLOCK_CHECKSUM_BYTES, shardLayout } from '../engine/layout.ts';
import { shardKey, type CodedUnit } from '../catalog/manifest.ts';
import { probeShardSize, readShardFile, type ShardFileInfo } from '../engine/shard-files.ts';
import { ShardReadError, ShardReader } from '../engine/shard-reader.ts';
import { BufferedShardSink, ShardSink } from '../engine/shard-sink.ts';
import { MAX_OPEN_SUBREQUESTS, Semaphore, drainingBackend } from '../engine/subrequests.ts';
import { QuorumError, digestOf } from '../engine/unit-writer.ts';

export interface RepairDeps {
  catalog: Catalog;
  backends: Map<string, Backend>;
}

/**
 * Repairs one task: finds the unit in the object's current manifest (gone units need nothing),
 * rewrites the shards that need it and records them repaired; throws (the queue retries later)
 * while some shard's backend is still unreachable or a rewrite failed.
 */
export async function runRepair(task: RepairTask, deps: RepairDeps): Promise<void> {
  const manifest = task.key ? await deps.catalog.getManifest(task.bucket, task.key) : null;
  const unit = manifest?.storage.kind === 'coded' ? manifest.storage.units.find((u) => u.unitId === task.unitId) : undefined;
  if (!unit) return;
  const { now, later } = await triageTargets(task.bucket, unit, task.shards, task.reason.startsWith('unavailable'), deps.backends);
  const fine = task.shards.filter((t) => !now.includes(t) && !later.includes(t));
  const result = now.length ? await repairUnit(task.bucket, unit, now, deps.backends) : { repaired: [], failed: [] };
  const repaired = [...fine, ...result.repaired].filter((t) => unit.missing.includes(t));
  if (repaired.length) await deps.catalog.markRepaired(task.bucket, task.key, unit.unitId, repaired);
  if (result.failed.length || later.length) {
    throw new Error(`repair of ${task.bucket}/${task.key} unit ${task.unitId}: ${JSON.stringify({ failed: result.failed, unreachable: later })}`);
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
  await Promise.all(targets.map(async (t) => {
    const state = await probeShardSize(backends.get(unit.placement[t]!), bucket, unit, t);
    if (state === 'unreachable') later.push(t);
    else if (state === 'damaged' || !transient) now.push(t);
  }));
  return { now: now.sort((a, b) => a - b), later: later.sort((a, b) => a - b) };
}

export async function repairUnit(bucket: string, unit: CodedUnit, targets: number[], allBackends: Map<string, Backend>): Promise<RepairResult> {
  const n = unit.k + unit.m;
  // k sources plus the rebuilt shards must fit in Workers' 6 open subrequests, else go buffered.
  const sem = unit.k + targets.length > MAX_OPEN_SUBREQUESTS ? new Semaphore(MAX_OPEN_SUBREQUESTS) : null;
  const backends = sem ? new Map([...allBackends].map(([id, b]) => [id, drainingBackend(b, sem)])) : allBackends;
  const replica = unit.codec === 'replica';
  const need = replica ? 1 : unit.k;
  const bad = new Set(targets);
  const backend = (i: number) => {
    const b = backends.get(unit.placement[i]!);
    if (!b) throw new ShardReadError(i, 'unavailable', `backend ${unit.placement[i]} is not configured`);
    return b;
  };
  // Header and footer come from any good shard; the footer is identical in every shard.
  let source: ShardFileInfo | null = null;
  for (let i = 0; i < n && !source; i++) {
    if (bad.has(i)) continue;
    source = await readShardFile(backend(i), shardKey(bucket, unit.unitId, i)).catch(() => null);
  }
  if (!source) throw new QuorumError(`no readable shard of unit ${unit.unitId} to repair from`, []);
  const layouts = unit.headerLens.map((_, i) => shardLayout(unit, i));
  const coder = createCoder(unit.k, replica ? 0 : unit.m);
  const stripe = coder.stripe(unit.blockSize);
  const abort = new AbortController();
  const sums = new Map<number, bigint[]>(targets.map((t) => [t, []]));
  const headers = targets.map((t) => encodeHeader({ ...source!.header, shardIndex: t }));
  headers.forEach((h, j) => {
    if (h.length !== unit.headerLens[targets[j]!]) throw new Error(`unit ${unit.unitId}: rebuilt header of shard ${targets[j]} has another length`);
  });
  const sinks = targets.map((t) => {
    const key = shardKey(bucket, unit.unitId, t), len = layouts[t]!.shardFileLen();
    return sem ? new BufferedShardSink(t, allBackends.get(unit.placement[t]!)!, key, len, abort.signal, (fn) => sem.run(fn)) : new ShardSink(t, backend(t), key, len, abort.signal);
  });
  const readers = new Map<number, ShardReader>();
  const salt = unitSalt(unit.unitId);
  try {
    await Promise.all(sinks.map((sink, j) => sink.write(headers[j]!)));
    for (let s = 0; s < layouts[0]!.stripes; s++) {
      const loaded = new Set<number>();
      for (;;) {
        const sources = [...Array(n).keys()].filter((i) => !bad.has(i)).slice(0, need);
        if (sources.length < need) throw new QuorumError(`unit ${unit.unitId}: fewer than ${need} good shards`, []);
        const results = await Promise.allSettled(
          sources.filter((i) => !loaded.has(i)).map(async (i) => {
            let r = readers.get(i);
            if (!r) readers.set(i, (r = new ShardReader(i, backend(i), shardKey(bucket, unit.unitId, i), layouts[i]!, s, layouts[0]!.stripes - 1, salt)));
            await r.readBlock(s, stripe, replica ? 0 : i);
            loaded.add(i);
          }),
        );
        const failures = results.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []));
        for (const e of failures) {
          if (!(e instanceof ShardReadError)) throw e;
          bad.add(e.shardIndex);
          readers.get(e.shardIndex)?.cancel();
          readers.delete(e.shardIndex);
        }
        if (failures.length === 0) {
          const len = layouts[0]!.blockLen(s);
          if (!replica) stripe.reconstruct([...Array(n).keys()].map((i) => sources.includes(i)), { len });
          await Promise.all(sinks.map((sink) => {
            const src = replica ? 0 : sink.shardIndex;
            const sum = stripe.xxh64(src, 0, len, blockSeed(salt, s, sink.shardIndex));
            sums.get(sink.shardIndex)!.push(sum);
            const chunk = new Uint8Array(BLOCK_CHECKSUM_BYTES + len);
            new DataView(chunk.buffer).setBigUint64(0, sum, true);
            chunk.set(stripe.shard(src).subarray(0, len), BLOCK_CHECKSUM_BYTES);
            return sink.write(chunk);
          }));
          break;
        }
      }
    }
    for (const sink of sinks) {
      const digest = digestOf(sums.get(sink.shardIndex)!, sink.shardIndex);
      if (digest !== source.footer.shardDigests[sink.shardIndex]) {
        sink.abort(new Error(`shard ${sink.shardIndex}: rebuilt digest differs from the footer's`));
      } else await sink.write(source.footerBytes);
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
    readers.forEach((r) => r.cancel());
    stripe.free();
    coder.free();
  }
}
