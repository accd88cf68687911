/**
 * The garbage collector (run by the cron trigger): deletes the shards of units the catalog has
 * handed over, once their grace delay has passed. Two kinds arrive: units that lost their last
 * reference (superseded, deleted, aborted; their placement is known) and expired reservations,
 * writes that never committed, whose shards may be on any backend and are found by listing
 * `sg1/<bucket>/<unitId>/`; and single shard files a move (upkeep/drain.ts) left behind. A unit that cannot be fully deleted is queued again for later. A unit
 * marked `tagRecord` loses its tag record (format/tag-record.ts) with its shards.
 * One run makes at most `maxCalls` backend calls (a Worker invocation has a subrequest limit):
 * what it took from the catalog and did not reach goes back, due at once, for the next run.
 */
import type { Backend } from '../../backends/types.ts';
import type { GarbageUnits } from '../catalog/types.ts';
import type { GarbageCatalog } from '../catalog/ports.ts';
import { shardKey, tagRecordKey, unitPrefix } from '../format/shard-key.ts';
import { MAX_OPEN_SUBREQUESTS, Semaphore } from '../engine/index.ts';

/** Delay before a failed deletion is tried again. */
const RETRY_MS = 60_000;
const TAKE = 20;

export async function collectGarbage(catalog: GarbageCatalog, byId: Map<string, Backend>, now = new Date(), maxCalls = 800): Promise<number> {
  let collected = 0;
  let calls = 0;
  const slots = new Semaphore(MAX_OPEN_SUBREQUESTS); // Workers' open subrequests per invocation
  const later = new Date(now.getTime() + RETRY_MS);
  for (;;) {
    const batch = await catalog.takeDueGarbage(now, TAKE);
    if (batch.length === 0) return collected;
    // One item per unit: a unit with its placement, the id of an expired reservation, or one
    // shard file a move left behind.
    const items: GarbageUnits[] = batch.flatMap(({ bucket, units, unitIds = [], shards = [] }) => [
      ...units.map((u) => ({ bucket, units: [u] })),
      ...unitIds.map((id) => ({ bucket, units: [], unitIds: [id] })),
      ...shards.map((s) => ({ bucket, units: [], shards: [s] })),
    ]);
    for (const [i, item] of items.entries()) {
      if (calls >= maxCalls) {
        for (const rest of items.slice(i)) await catalog.queueGarbage(rest, now);
        return collected;
      }
      const unit = item.units[0];
      const moved = item.shards?.[0];
      // A unit whose object's tags changed after the write also has a tag record on each backend.
      const keysOn = (j: number) => [shardKey(item.bucket, unit!.unitId, j), ...(unit!.tagRecord ? [tagRecordKey(item.bucket, unit!.unitId)] : [])];
      // A moved shard's old copy; a backend no longer reachable (retired) is left alone.
      const results = moved
        ? await Promise.allSettled(
            [shardKey(item.bucket, moved.unitId, moved.shard), ...(moved.tagRecord ? [tagRecordKey(item.bucket, moved.unitId)] : [])].map((key) =>
              slots.run(async () => (await byId.get(moved.backend)?.delete(key), 1)),
            ),
          )
        : unit
          ? await Promise.allSettled(unit.placement.flatMap((id, j) => keysOn(j).map((key) => slots.run(async () => (await byId.get(id)?.delete(key), 1)))))
          : await Promise.allSettled([...byId.values()].map((b) => deleteUnder(b, unitPrefix(item.bucket, item.unitIds![0]!), slots)));
      calls += results.reduce((n, r) => n + (r.status === 'fulfilled' ? (r.value ?? 1) : 1), 0);
      if (results.some((r) => r.status === 'rejected')) await catalog.queueGarbage(item, later);
      else collected++;
    }
  }
}

/** Deletes every blob under `prefix` on one backend; returns the backend calls it made. */
async function deleteUnder(backend: Backend, prefix: string, slots: Semaphore): Promise<number> {
  let cursor: string | undefined;
  let calls = 0;
  do {
    const page = await slots.run(() => backend.list(prefix, cursor));
    await Promise.all(page.entries.map((e) => slots.run(() => backend.delete(e.key))));
    calls += 1 + page.entries.length;
    cursor = page.cursor;
  } while (cursor);
  return calls;
}
