/**
 * The garbage collector (run by the cron trigger): deletes the shards of units the catalog has
 * handed over, once their grace delay has passed. Two kinds arrive: units that lost their last
 * reference (superseded, deleted, aborted; their placement is known) and expired reservations,
 * writes that never committed, whose shards may be on any backend and are found by listing
 * `sg1/<bucket>/<unitId>/`. A unit that cannot be fully deleted is queued again for later.
 */
import type { Backend } from '../../backends/types.ts';
import type { Catalog } from '../catalog/types.ts';
import { shardKey, type CodedUnit } from './manifest.ts';

/** Delay before a failed deletion is tried again. */
const RETRY_MS = 60_000;

export async function collectGarbage(catalog: Catalog, byId: Map<string, Backend>, now = new Date()): Promise<number> {
  let collected = 0;
  const retry = (bucket: string, units: CodedUnit[], unitIds: string[]) =>
    catalog.queueGarbage({ bucket, units, ...(unitIds.length ? { unitIds } : {}) }, new Date(now.getTime() + RETRY_MS));
  for (;;) {
    const batch = await catalog.takeDueGarbage(now, 100);
    if (batch.length === 0) return collected;
    for (const { bucket, units, unitIds = [] } of batch) {
      for (const u of units) {
        const results = await Promise.allSettled(u.placement.map((id, i) => byId.get(id)?.delete(shardKey(bucket, u.unitId, i))));
        if (results.some((r) => r.status === 'rejected')) await retry(bucket, [u], []);
        else collected++;
      }
      for (const id of unitIds) {
        const results = await Promise.allSettled([...byId.values()].map((b) => deleteUnder(b, `sg1/${bucket}/${id}/`)));
        if (results.some((r) => r.status === 'rejected')) await retry(bucket, [], [id]);
        else collected++;
      }
    }
  }
}

/** Deletes every blob under `prefix` on one backend. */
async function deleteUnder(backend: Backend, prefix: string): Promise<void> {
  let cursor: string | undefined;
  do {
    const page = await backend.list(prefix, cursor);
    await Promise.all(page.entries.map((e) => backend.delete(e.key)));
    cursor = page.cursor;
  } while (cursor);
}
