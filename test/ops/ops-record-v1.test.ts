/**
 * The ops record as the release before per-job traffic stored it (test/fixtures/ops-v1, written
 * by commit 215a2d0's own code: generate.ts) opened by today's OpsObject: the totals, minute rows
 * and per-bucket traffic read back as that release reported them, no job lines appear, and new
 * deltas that carry job traffic add onto the old totals and are stored with them.
 */
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MemoryBackend } from '../../backends/memory.ts';
import { MeteredBackend } from '../../backends/metered.ts';
import { trafficByBucket, trafficByJob } from '../../worker/ops/counters.ts';
import { IsolateMeter } from '../../worker/ops/meter.ts';
import { OpsObject } from '../../worker/ops/ops-object.ts';
import { activeRate } from '../../worker/ops/active-rate.ts';
import { emptyCounters } from '../../worker/ops/counters.ts';
import { SHARD_KEY_ROOT } from '../../worker/format/shard-key.ts';
import { SqliteStorage } from '../support/sqlite-storage.ts';

const FIXTURE = new URL('../fixtures/ops-v1/', import.meta.url);
const expected = JSON.parse(readFileSync(new URL('expected.json', FIXTURE), 'utf8'));
const open = (storage: SqliteStorage) => new OpsObject(storage.objectState(), {} as Cloudflare.Env);

describe('the ops record written before per-job traffic was counted', () => {
  afterEach(() => vi.restoreAllMocks());

  it('reads back as the old release reported it, with no job lines', async () => {
    const snap = await open(SqliteStorage.open(readFileSync(new URL('ops.sqlite', FIXTURE)))).snapshot(0);
    expect(snap.since).toBe(expected.since);
    expect(snap.totals).toEqual(expected.totals);
    expect(snap.minutes.map((m) => m.at)).toEqual(expected.minutes);
    expect(trafficByBucket(snap.totals)).toEqual(expected.trafficByBucket);
    expect(trafficByJob(snap.totals)).toEqual([]);
  });

  it('adds a delta with job traffic onto the old totals, and keeps both when reopened', async () => {
    const storage = SqliteStorage.open(readFileSync(new URL('ops.sqlite', FIXTURE)));
    const record = open(storage);
    const dir = Object.keys(expected.totals.buckets)[0] as string; // the old code's shard directory
    const at = expected.minutes.at(-1) + 5 * 60_000;
    vi.spyOn(Date, 'now').mockReturnValue(at); // the record drops minute rows a day old: by its clock
    const meter = new IsolateMeter(() => at);
    const backend = new MeteredBackend(
      new MemoryBackend({ id: 'mem-0', domain: 'zone-0' }),
      (r) => meter.backendCall(r),
      () => at,
    );
    const shardKey = `${SHARD_KEY_ROOT}${dir}/moved-shard`;
    await meter.job('move', async () => {
      await backend.put(shardKey, new Uint8Array(100), 100);
      await new Response((await backend.get(shardKey)).body).arrayBuffer();
    });
    await record.record(meter.take()!);

    for (const snap of [await record.snapshot(0), await open(SqliteStorage.open(storage.export())).snapshot(0)]) {
      expect(snap.since).toBe(expected.since);
      expect(trafficByJob(snap.totals)).toEqual([
        { job: 'move', backendId: 'mem-0', puts: 1, gets: 1, heads: 0, lists: 0, deletes: 0, bytesIn: 100, bytesOut: 100 },
      ]);
      const old = expected.trafficByBucket.find((t: { backendId: string; bucket: string | null }) => t.backendId === 'mem-0' && t.bucket === dir);
      expect(trafficByBucket(snap.totals).find((t) => t.backendId === 'mem-0' && t.bucket === dir)).toEqual({
        ...old,
        puts: old.puts + 1,
        gets: old.gets + 1,
        bytesIn: old.bytesIn + 100,
        bytesOut: old.bytesOut + 100,
      });
      expect(snap.totals.backends['mem-0']!.ops.put!.requests).toBe(expected.totals.backends['mem-0'].ops.put.requests + 1);
      expect(snap.minutes.map((m) => m.at)).toEqual([...expected.minutes, at]);
      expect(snap.minutes.every((m) => m.counters.jobs === undefined)).toBe(true); // job lines: totals only
    }
  });

  it('minute rows without the first time of their events (issue 37) rate from the minute start; new ones carry it', async () => {
    const storage = SqliteStorage.open(readFileSync(new URL('ops.sqlite', FIXTURE)));
    const record = open(storage);
    const old = (await record.snapshot(0)).minutes;
    expect(old.every((m) => m.counters.eventsFirstAt === undefined)).toBe(true);
    const first = old[0]!;
    // The old minute's 2 probes: counted from its start, 60 s before "now".
    expect(activeRate(old, 'probes', first.at + 60_000, 5 * 60_000)).toEqual({ perSecond: 2 / 60, since: first.at });
    const at = expected.minutes.at(-1) + 5 * 60_000 + 42_000;
    vi.spyOn(Date, 'now').mockReturnValue(at);
    await record.record({ ...emptyCounters(), at, events: { repairs_done: 3 } });
    const row = (await record.snapshot(0)).minutes.at(-1)!;
    expect(row.counters.eventsFirstAt).toEqual({ repairs_done: at });
  });
});
