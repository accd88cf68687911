/**
 * One shard's move (issue 26): shard `shard` of a stored unit goes from the backend its placement
 * names (draining or retired) to `target`, in four steps, each safe to stop after:
 * 1. copy: the shard file as stored, through the one writer, verified as it goes
 *    (engine copyShard); a source that cannot be read (missing, rotten, its backend down or
 *    retired, or recorded missing) is rebuilt from the unit's other shards at the target instead
 *    (engine rebuildShards: checked against the footer's digest before it is stored);
 * 2. the tag record, if the unit has one, copied beside it;
 * 3. commit: the catalog swaps the placement only if the shard is still where it was
 *    (commitMove, a compare-and-set) and, in the same step, queues the old copy for deletion
 *    after the grace delay, so reads that looked up the old placement finish;
 * 4. lost race: the unit was overwritten, deleted or moved meanwhile: the new copy is deleted
 *    (queued as garbage when the delete fails), nothing else changes.
 * A crash between 1 and 3 leaves an unreferenced file at the target under the unit's key: a
 * later move of the same shard to the same target overwrites it, and when the unit goes, the
 * collector deletes by placement, so such a leftover on a backend the unit never reached is the
 * known gap (docs/OPERATING.md "Changing the fleet").
 */
import { isBackendError, type Backend } from '../../backends/types.ts';
import type { ShardMove, UnitRecord } from '../catalog/types.ts';
import type { UpkeepCatalog } from '../catalog/ports.ts';
import { shardKey, tagRecordKey } from '../format/shard-key.ts';
import { copyShard, rebuildShards } from '../engine/index.ts';
import { errorMessage } from '../model/error-message.ts';

export interface MoveDeps {
  catalog: UpkeepCatalog;
  /** Backends that may be read and written (a retired one is absent: its shards are rebuilt). */
  backends: Map<string, Backend>;
  /** Delay before the old copy is deleted. */
  graceMs: number;
  now?: () => number;
}

export type MoveOutcome =
  /** Committed: the shard was copied, or rebuilt from the others. */
  | { kind: 'moved'; how: 'copied' | 'rebuilt'; move: ShardMove }
  /** The unit or its placement changed meanwhile: nothing to move any more (the copy is gone). */
  | { kind: 'gone'; move: ShardMove }
  /** Not now: the target refused, or too few shards are readable to rebuild; tried again later. */
  | { kind: 'waiting'; move: ShardMove; error: string /** 'target': the target refused the write. */; at: 'target' | 'sources' };

export async function moveShard(bucket: string, record: UnitRecord, shard: number, target: Backend, deps: MoveDeps): Promise<MoveOutcome> {
  const { unit } = record;
  const move: ShardMove = { key: record.key, unitId: unit.unitId, shard, from: unit.placement[shard]!, to: target.id };
  const key = shardKey(bucket, unit.unitId, shard);
  const source = deps.backends.get(move.from);
  let how: 'copied' | 'rebuilt' = 'copied';
  try {
    if (!source || unit.missing.includes(shard)) throw new Error('source not readable');
    await copyShard(bucket, unit, shard, source, target);
  } catch (err) {
    if (isBackendError(err) && err.backendId === target.id) return waiting(move, err, target, key, 'target');
    // The source cannot give this shard: rebuild it from the others, straight to the target.
    how = 'rebuilt';
    const others = new Map(deps.backends);
    others.set(target.id, target);
    const placement = unit.placement.map((id, i) => (i === shard ? target.id : id));
    try {
      const result = await rebuildShards(bucket, { ...unit, placement, missing: unit.missing.filter((i) => i !== shard) }, [shard], others);
      if (result.failed.length) return waiting(move, new Error(result.failed[0]!.error), target, key, 'target');
    } catch (rebuildErr) {
      return waiting(move, rebuildErr, target, key, 'sources');
    }
  }
  if (unit.tagRecord) await copyTagRecord(bucket, unit.unitId, unit.placement, target, deps.backends);
  const now = deps.now?.() ?? Date.now();
  const committed = await deps.catalog.commitMove(bucket, move, new Date(now + deps.graceMs));
  if (committed === 'moved') return { kind: 'moved', how, move };
  // Lost the race: the copy is nobody's. Deleted now (no reader can know it), or by the collector.
  try {
    await target.delete(key);
  } catch {
    await deps.catalog.queueGarbage({ bucket, units: [], shards: [{ unitId: unit.unitId, shard, backend: target.id }] }, new Date(now));
  }
  return { kind: 'gone', move };
}

/** A failed copy may have left part of a file at the target (some backends keep partial uploads). */
async function waiting(move: ShardMove, err: unknown, target: Backend, key: string, at: 'target' | 'sources'): Promise<MoveOutcome> {
  await target.delete(key).catch(() => {});
  return { kind: 'waiting', move, error: errorMessage(err), at };
}

/**
 * The unit's tag record (engine/tag-record.ts: on every backend of its placement) copied to the
 * target from the first holder that answers; best effort: the others still hold it, and the
 * catalog holds the tags themselves.
 */
async function copyTagRecord(bucket: string, unitId: string, placement: string[], target: Backend, backends: Map<string, Backend>): Promise<void> {
  const key = tagRecordKey(bucket, unitId);
  for (const id of placement) {
    const b = backends.get(id);
    if (!b || id === target.id) continue;
    try {
      const { body, size } = await b.get(key);
      const bytes = new Uint8Array(await new Response(body).arrayBuffer());
      await target.put(key, bytes, size);
      return;
    } catch {
      // the next holder
    }
  }
}
