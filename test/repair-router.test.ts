/**
 * RepairRouter (worker/upkeep/repair-router.ts): where damage and health reports go. A fake catalog
 * records the calls; keepAlive collects the background work so each case can wait for it.
 */
import { describe, expect, it } from 'vitest';
import type { BackendCallReport } from '../backends/metered.ts';
import type { Catalog } from '../worker/catalog/ports.ts';
import type { RepairTask } from '../worker/engine/ec-store.ts';
import { RepairRouter } from '../worker/upkeep/repair-router.ts';
import { shardKey } from '../worker/format/shard-key.ts';

function setup(queued: boolean, failing = false) {
  const calls: string[] = [];
  const logs: Record<string, unknown>[] = [];
  const pending: Promise<unknown>[] = [];
  let now = 0;
  const record =
    (name: string) =>
    async (...args: unknown[]) => {
      calls.push(`${name} ${JSON.stringify(args)}`);
      if (failing) throw new Error('catalog unreachable');
    };
  const catalog = {
    markMissing: record('markMissing'),
    repairSoon: record('repairSoon'),
    listBucketRecords: async () => [{ name: 'a' }, { name: 'b' }],
  } as unknown as Catalog;
  const repaired: RepairTask[] = [];
  const router = new RepairRouter({
    catalog,
    queued,
    repairNow: async (t) => void repaired.push(t),
    keepAlive: (p) => void pending.push(p),
    log: (line) => void logs.push(line),
    now: () => now,
  });
  const settle = async () => {
    while (pending.length) await pending.shift();
  };
  return { router, calls, logs, repaired, settle, advance: (ms: number) => (now += ms) };
}

const task = (reason: RepairTask['reason']): RepairTask => ({ bucket: 'a', key: 'k', unitId: 'u', shards: [2], reason });
const call = (backend: string, outcome: BackendCallReport['outcome']): BackendCallReport => ({
  backend,
  op: 'get',
  ms: 1,
  bytes: 0,
  key: shardKey('a', 'u', 2),
  outcome,
});

describe('RepairRouter with a repair queue (the catalog drives repairs)', () => {
  it('a write that missed shards: nothing to send, its commit recorded them', async () => {
    const s = setup(true);
    s.router.report(task({ kind: 'write-missed' }));
    await s.settle();
    expect(s.calls).toEqual([]);
  });

  it('a shard a read or the scrubber found missing or rotten: recorded on the worklist', async () => {
    const s = setup(true);
    s.router.report(task({ kind: 'corrupt', by: 'read', detail: 'block checksum' }));
    s.router.report(task({ kind: 'missing', by: 'read', detail: 'NotFound' }));
    await s.settle();
    expect(s.calls).toEqual(['markMissing ["a","u",[2],"k"]', 'markMissing ["a","u",[2],"k"]']); // the unit's key: where the catalog routes it
  });

  it('a shard whose backend did not answer is not damage', async () => {
    const s = setup(true);
    s.router.report(task({ kind: 'unavailable', by: 'read', detail: 'connection refused' }));
    await s.settle();
    expect(s.calls).toEqual([]);
  });

  it('degraded reads wake the bucket, once per debounce period', async () => {
    const s = setup(true);
    s.router.degradedRead('a');
    s.router.degradedRead('a');
    s.advance(2000);
    s.router.degradedRead('a');
    await s.settle();
    expect(s.calls).toEqual(['repairSoon ["a",false]', 'repairSoon ["a",false]']);
  });

  it('a backend seen answering after failing makes every bucket due at once, its repair backoff ended; healthy calls do nothing', async () => {
    const s = setup(true);
    s.router.backendCall(call('b3', 'ok'));
    await s.settle();
    expect(s.calls).toEqual([]);
    s.router.backendCall(call('b3', 'Timeout'));
    s.router.backendCall(call('b3', 'Unavailable'));
    s.router.backendCall(call('b3', 'ok'));
    s.router.backendCall(call('b3', 'ok')); // already counted back
    await s.settle();
    expect(s.calls).toEqual(['repairSoon ["a",true,"b3"]', 'repairSoon ["b",true,"b3"]']);
    expect(s.logs).toContainEqual(expect.objectContaining({ event: 'backend back', backend: 'b3' }));
  });

  it('a catalog failure is logged, never an unhandled rejection', async () => {
    const s = setup(true, true);
    s.router.report(task({ kind: 'missing', by: 'read', detail: 'NotFound' }));
    await s.settle();
    expect(s.logs).toContainEqual(expect.objectContaining({ level: 'warn', event: 'could not record damage', error: 'catalog unreachable' }));
  });
});

describe('RepairRouter without a queue', () => {
  it('repairs in the background of the request that found the damage, write misses included', async () => {
    const s = setup(false);
    s.router.report(task({ kind: 'write-missed' }));
    s.router.report(task({ kind: 'corrupt', by: 'read', detail: 'block checksum' }));
    s.router.report(task({ kind: 'unavailable', by: 'read', detail: 'timeout' }));
    s.router.degradedRead('a');
    await s.settle();
    expect(s.repaired.map((t) => t.reason.kind)).toEqual(['write-missed', 'corrupt']);
    expect(s.calls).toEqual([]);
  });
});
