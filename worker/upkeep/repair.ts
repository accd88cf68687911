/**
 * Repair: the repair queue's work (`runRepair`): one RepairTask, triaged (which reported shards
 * need rewriting now, which wait for their backend), rebuilt by the engine (rebuildShards: the
 * shards rewritten from k good ones, byte for byte what the writer produced) and recorded in the
 * catalog.
 */
import type { Backend } from '../../backends/types.ts';
import type { UnitRecord } from '../catalog/types.ts';
import type { ObjectCatalog, UpkeepCatalog } from '../catalog/ports.ts';
import { shardKey } from '../format/shard-key.ts';
import type { CodedUnit } from '../format/manifest.ts';
import { MAX_OPEN_SUBREQUESTS, probeShardSize, rebuildShards, type RepairTask, Semaphore } from '../engine/index.ts';

export interface RepairDeps {
  /** getVersion: the lock of a version whose shards are rebuilt onto a backend that enforces retention. */
  catalog: UpkeepCatalog & Partial<Pick<ObjectCatalog, 'getVersion'>>;
  backends: Map<string, Backend>;
  /**
   * Which backends this isolate knows down now (engine/reachability.ts): a shard to be written to
   * one waits (`later`) without a probe, and the unit is not rebuilt. A rebuild reads k shards,
   * the unit's whole size, only to fail at its write; the repairs a degraded read queues would
   * otherwise spend that on every unit of a down backend, beside the clients' reads.
   */
  isDown?: (backendId: string) => boolean;
}

/** A repair that could not write some shards: `unreachable` names the backends it could not reach (the worklist backs them off). */
export class RepairBlockedError extends Error {
  override readonly name = 'RepairBlockedError';
  constructor(
    message: string,
    readonly unreachable: string[],
  ) {
    super(message);
  }
}

/**
 * Repairs one task: finds the unit by its id in the unit index (whatever object version holds it;
 * a unit no longer stored needs nothing), rewrites the shards that need it and records them
 * repaired; throws (the queue retries later) while some shard's backend is still unreachable or
 * a rewrite failed.
 */
export async function runRepair(task: RepairTask, deps: RepairDeps): Promise<void> {
  const found = await deps.catalog.getUnit(task.bucket, task.unitId, task.key);
  if (!found) return;
  const { unit, key } = found;
  const { now, later } = await triageTargets(task.bucket, unit, task.shards, task.reason.kind === 'unavailable', deps.backends, deps.isDown);
  const fine = task.shards.filter((t) => !now.includes(t) && !later.includes(t));
  const result = now.length ? await rebuildShards(task.bucket, unit, now, deps.backends) : { repaired: [], failed: [] };
  if (result.repaired.length) await retainRebuilt(task.bucket, found, result.repaired, deps);
  const repaired = [...fine, ...result.repaired].filter((t) => unit.missing.includes(t));
  if (repaired.length) await deps.catalog.markRepaired(task.bucket, unit.unitId, repaired, key);
  if (result.failed.length || later.length) {
    // Named by backend: what an operator reads on the worklist (`shardgate repair --list`).
    const why = [
      ...later.map((t) => `shard ${t} on ${unit.placement[t]}: backend unreachable`),
      ...result.failed.map((f) => `shard ${f.shard} on ${unit.placement[f.shard]}: ${f.error}`),
    ];
    const unreachable = [...later.map((t) => unit.placement[t]!), ...result.failed.map((f) => unit.placement[f.shard]!)];
    throw new RepairBlockedError(`repair of ${task.bucket}/${key} unit ${task.unitId}: ${why.join('; ')}`, [...new Set(unreachable)]);
  }
}

/**
 * Which reported shards to rewrite now, before any byte is written: a shard reported only
 * unreachable (`transient`) that is back with its full length is left alone (rewriting it would
 * cost a whole shard, and on a backend without atomic PUTs an interrupted rewrite would destroy a
 * good copy); a shard whose backend still does not answer waits (`later`), and so does one whose
 * backend `isDown` says is down, without being asked. Missing, short or rotten shards are rewritten.
 */
export async function triageTargets(
  bucket: string,
  unit: CodedUnit,
  targets: number[],
  transient: boolean,
  backends: Map<string, Backend>,
  isDown?: (backendId: string) => boolean,
): Promise<{ now: number[]; later: number[] }> {
  const now: number[] = [],
    later: number[] = [];
  const slots = new Semaphore(MAX_OPEN_SUBREQUESTS);
  await Promise.all(
    targets.map(async (t) => {
      if (isDown?.(unit.placement[t]!)) return void later.push(t);
      const state = await slots.run(() => probeShardSize(backends.get(unit.placement[t]!), bucket, unit, t));
      if (state === 'unreachable') later.push(t);
      else if (state === 'damaged' || !transient) now.push(t);
    }),
  );
  return { now: now.sort((a, b) => a - b), later: later.sort((a, b) => a - b) };
}

/**
 * Shards rebuilt onto backends that enforce retention (Backend.retain) get the COMPLIANCE
 * retention of their version, as the write's shards did (ec-store.ts retainShards): a locked
 * version stays undeletable with the gateway's own credentials after a repair too. A shard not
 * retained is logged; the repair stands (the gateway's own lock still holds the version).
 */
async function retainRebuilt(bucket: string, found: UnitRecord, shards: number[], deps: RepairDeps): Promise<void> {
  const targets = shards.map((i) => ({ i, backend: deps.backends.get(found.unit.placement[i]!) })).filter((t) => t.backend?.retain);
  if (!targets.length || !deps.catalog.getVersion) return;
  const v = await deps.catalog.getVersion(bucket, found.key, found.versionId);
  const lock = v.kind === 'object' ? v.manifest.metadata.objectLock : undefined;
  if (lock?.mode !== 'COMPLIANCE' || !lock.retainUntil || Date.parse(lock.retainUntil) <= Date.now()) return;
  const retainUntil = new Date(lock.retainUntil);
  const results = await Promise.allSettled(targets.map((t) => t.backend!.retain!(shardKey(bucket, found.unit.unitId, t.i), { retainUntil })));
  const failed = results.filter((r) => r.status === 'rejected').length;
  if (failed)
    console.error(
      JSON.stringify({
        level: 'error',
        msg: 'object lock: repaired shards not retained by their backends',
        bucket,
        key: found.key,
        unitId: found.unit.unitId,
        failed,
      }),
    );
}
