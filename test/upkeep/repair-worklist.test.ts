/**
 * The repair worklist's outer ends (worker/upkeep/repair-worklist.ts): the queue consumer acks
 * every message and reports failures to the catalog; the cron wakes every bucket's worklist and,
 * without a queue, repairs a batch itself.
 */
import { describe, expect, it } from 'vitest';
import { localCatalog } from '../support/local-catalog.ts';
import type { RepairTask } from '../../worker/engine/ec-store.ts';
import { consumeRepairs, wakeWorklists } from '../../worker/upkeep/repair-worklist.ts';
import { manifest, unit } from '../catalog/fixtures.ts';

const task = (key: string, unitId: string): RepairTask => ({ bucket: 'b', key, unitId, shards: [1], reason: { kind: 'worklist' } });

async function degradedCatalog() {
  const catalog = localCatalog();
  await catalog.insertBucket('b', 'auto');
  const u1 = { ...unit(), missing: [1] },
    u2 = { ...unit(), missing: [2] };
  await catalog.commitManifest('b', 'one', manifest('b', 'one', [u1]), {});
  await catalog.commitManifest('b', 'two', manifest('b', 'two', [u2]), {});
  return { catalog, u1, u2 };
}

describe('consumeRepairs', () => {
  it('acks every message; a failed repair is recorded on the worklist with its error, not retried', async () => {
    const { catalog, u1, u2 } = await degradedCatalog();
    const acked: string[] = [];
    const messages = [task('one', u1.unitId), task('two', u2.unitId)].map((body) => ({ body, ack: () => void acked.push(body.key!) }));
    await consumeRepairs(messages, {
      catalog,
      repair: async (t) => {
        if (t.key === 'two') throw new Error('shard 2 on b2: backend unreachable');
        await catalog.markRepaired(t.bucket, t.unitId, t.shards, t.key);
      },
      log: () => {},
    });
    expect(acked).toEqual(['one', 'two']);
    expect(await catalog.listDegradedUnits('b', null, 10)).toEqual([
      expect.objectContaining({ key: 'two', attempts: 1, lastError: 'shard 2 on b2: backend unreachable' }),
    ]);
  });

  it('a catalog that cannot record the failure is logged, and the message still acked', async () => {
    const { catalog, u1 } = await degradedCatalog();
    const logs: Record<string, unknown>[] = [];
    let acked = 0;
    catalog.repairFailed = async () => {
      throw new Error('catalog unreachable');
    };
    await consumeRepairs([{ body: task('one', u1.unitId), ack: () => void acked++ }], {
      catalog,
      repair: async () => {
        throw new Error('down');
      },
      log: (l) => void logs.push(l),
    });
    expect(acked).toBe(1);
    expect(logs).toEqual([expect.objectContaining({ event: 'could not record a failed repair', error: 'catalog unreachable' })]);
  });
});

describe('wakeWorklists', () => {
  it('with a queue: wakes every bucket, repairs nothing itself', async () => {
    const { catalog } = await degradedCatalog();
    const woken: string[] = [];
    catalog.repairSoon = async (bucket) => void woken.push(bucket);
    const repaired: string[] = [];
    await wakeWorklists({ catalog, repair: async (t) => void repaired.push(t.key!), log: () => {} }, true);
    expect(woken).toEqual(['b']);
    expect(repaired).toEqual([]);
  });

  it('without a queue: the cron repairs the worklist itself', async () => {
    const { catalog } = await degradedCatalog();
    await wakeWorklists({ catalog, repair: (t) => catalog.markRepaired(t.bucket, t.unitId, t.shards, t.key), log: () => {} }, false);
    expect(await catalog.listDegradedUnits('b', null, 10)).toEqual([]);
  });
});
