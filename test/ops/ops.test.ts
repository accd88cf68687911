/**
 * The ops pieces in Node, each against its contract: latency quantiles; the metered backend and
 * the isolate meter (NotFound is an answer, Unavailable makes a backend down, bytes per kind, a
 * per-request tally, an upkeep job's calls counted apart); the flusher (counts kept when a flush
 * fails); the shared record's book (minutes add up, totals only grow, per-job traffic in the
 * totals only, totals of the previous shape still load); backend health states; the Prometheus
 * text as the official client parses it, odd label values included; the request log line; who
 * may read the operator routes (open, bearer token, unsigned).
 */
import { Hono } from 'hono';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { render } from '../../cli/commands/status.ts';
import type { StatusLike } from '../../cli/gateway-client.ts';
import { MemoryBackend } from '../../backends/memory.ts';
import { FaultyBackend } from '../../backends/faulty.ts';
import { MeteredBackend } from '../../backends/metered.ts';
import { BackendError } from '../../backends/types.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { createApp } from '../../worker/app/app.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { createOperator } from '../../worker/app/operator.ts';
import { MemoryOpsRecord, OpsBook, MemoryBookStore } from '../../worker/ops/book.ts';
import { addCounters, emptyCounters, trafficByBucket, trafficByJob } from '../../worker/ops/counters.ts';
import type { OpsCounters } from '../../worker/ops/types.ts';
import { OpsFlusher } from '../../worker/ops/flusher.ts';
import { backendHealth } from '../../worker/ops/health.ts';
import { bucketOf, emptyHistogram, quantile } from '../../worker/ops/histogram.ts';
import { IsolateMeter } from '../../worker/ops/meter.ts';
import { renderMetrics } from '../../worker/ops/prometheus.ts';
import { OpsService } from '../../worker/ops/service.ts';
import { upkeepRates } from '../../worker/ops/status.ts';
import { requestLog } from '../../worker/app/request-log.ts';
import type { AppEnv } from '../../worker/s3/context.ts';
import { allowAllGate } from '../support/allow-all-gate.ts';
import { testS3Settings } from '../support/memory-store.ts';
import { parseMetrics, valueOf } from './helpers.ts';
import { bucketPrefix, shardKey } from '../../worker/format/shard-key.ts';

afterEach(() => vi.restoreAllMocks());

describe('latency histogram', () => {
  it('estimates quantiles inside the bucket that holds them', () => {
    const h = emptyHistogram();
    h[3] = 50; // (5, 10] ms
    h[6] = 50; // (50, 100] ms
    expect(quantile(h, 0.5)).toBe(10);
    expect(quantile(h, 0.25)).toBe(7.5);
    expect(quantile(h, 0.99)).toBeCloseTo(99);
    expect(quantile(emptyHistogram(), 0.5)).toBeNull();
    const slow = emptyHistogram();
    slow[slow.length - 1] = 3; // past the last edge: the edge
    expect(quantile(slow, 0.5)).toBe(30_000);
  });
});

describe('metered backend and isolate meter', () => {
  it('counts calls by kind and bytes; NotFound is an answer; Unavailable makes the backend down', async () => {
    let now = 1000;
    const meter = new IsolateMeter(() => now);
    const faulty = new FaultyBackend(new MemoryBackend({ id: 'b', domain: 'd' }));
    const b = new MeteredBackend(
      faulty,
      (r) => meter.backendCall(r),
      () => now,
    );
    const tally = { backendCalls: 0, backendErrors: 0 };
    await meter.withTally(tally, async () => {
      await b.put('k', new Uint8Array(100), 100);
      await b.get('k', { offset: 10, length: 20 });
      await expect(b.head('missing')).rejects.toThrow(BackendError);
    });
    now = 2000;
    faulty.goOffline();
    await expect(b.get('k')).rejects.toThrow(/offline/);
    const d = meter.take()!;
    expect(d.at).toBe(2000);
    const c = d.backends.b!;
    expect([c.ops.put?.requests, c.ops.put?.bytes, c.ops.get?.requests, c.ops.get?.bytes, c.ops.get?.errors, c.ops.head?.errors]).toEqual([
      1, 100, 2, 20, 1, 0,
    ]);
    expect(c).toMatchObject({ lastOkAt: 1000, lastDownAt: 2000, lastErrorAt: 2000, lastErrorKind: 'Unavailable' });
    expect(tally).toEqual({ backendCalls: 3, backendErrors: 0 }); // the offline call was outside the tally
    // Keys that are no shard keys belong to no bucket.
    expect(trafficByBucket(d)).toEqual([{ backendId: 'b', bucket: null, puts: 1, gets: 2, heads: 1, lists: 0, deletes: 0, bytesIn: 100, bytesOut: 20 }]);
    expect(meter.take()).toBeNull();
  });

  it('counts traffic per bucket from the shard keys; what no bucket accounts for stays with the backend', async () => {
    const meter = new IsolateMeter();
    const b = new MeteredBackend(new MemoryBackend({ id: 'b', domain: 'd' }), (r) => meter.backendCall(r));
    await b.put(shardKey('photos', 'u1', 0), new Uint8Array(300), 300);
    await b.get(shardKey('photos', 'u1', 0), { offset: 0, length: 100 });
    await b.put(shardKey('logs', 'u2', 1), new Uint8Array(50), 50);
    await b.delete(shardKey('logs', 'u2', 1));
    await b.list(bucketPrefix());
    const totals = emptyCounters();
    const delta = meter.take()!;
    addCounters(totals, delta); // as the shared record adds the deltas of two isolates
    addCounters(totals, delta);
    const byKey = Object.fromEntries(trafficByBucket(totals).map((t) => [`${t.backendId} ${t.bucket}`, t]));
    expect(byKey['b photos']).toMatchObject({ puts: 2, gets: 2, deletes: 0, bytesIn: 600, bytesOut: 200 });
    expect(byKey['b logs']).toMatchObject({ puts: 2, deletes: 2, bytesIn: 100, bytesOut: 0 });
    expect(byKey['b null']).toMatchObject({ puts: 0, gets: 0, lists: 2, bytesIn: 0, bytesOut: 0 });
  });

  it("counts the calls made inside an upkeep job under the job too (in the promises it starts); calls outside are not the job's", async () => {
    const meter = new IsolateMeter();
    const a = new MeteredBackend(new MemoryBackend({ id: 'a', domain: 'd' }), (r) => meter.backendCall(r));
    const b = new MeteredBackend(new MemoryBackend({ id: 'b', domain: 'e' }), (r) => meter.backendCall(r));
    await a.put(shardKey('photos', 'u1', 0), new Uint8Array(400), 400); // a client's write, before
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const moved = meter.job('move', async () => {
      await a.get(shardKey('photos', 'u1', 0), { offset: 0, length: 300 });
      // Started here, awaited later, after a call outside the job ran meanwhile.
      const copy = (async () => {
        await gate;
        await b.put(shardKey('photos', 'u1', 0), new Uint8Array(300), 300);
      })();
      await copy;
      await a.list(bucketPrefix());
      return 'done';
    });
    await a.head(shardKey('photos', 'u1', 0)); // a client's read while the job runs
    release();
    expect(await moved).toBe('done');
    await meter.job('restripe', async () => void (await b.delete(shardKey('logs', 'u2', 1))));
    await b.get(shardKey('photos', 'u1', 0)); // a client's read, after
    const totals = emptyCounters();
    addCounters(totals, meter.take()!);
    const byJob = Object.fromEntries(trafficByJob(totals).map((t) => [`${t.job} ${t.backendId}`, t]));
    expect(byJob).toEqual({
      'move a': { job: 'move', backendId: 'a', puts: 0, gets: 1, heads: 0, lists: 1, deletes: 0, bytesIn: 0, bytesOut: 300 },
      'move b': { job: 'move', backendId: 'b', puts: 1, gets: 0, heads: 0, lists: 0, deletes: 0, bytesIn: 300, bytesOut: 0 },
      'restripe b': { job: 'restripe', backendId: 'b', puts: 0, gets: 0, heads: 0, lists: 0, deletes: 1, bytesIn: 0, bytesOut: 0 },
    });
    // The job's calls still count in the backend and bucket lines: a breakdown, not a subtraction.
    const byKey = Object.fromEntries(trafficByBucket(totals).map((t) => [`${t.backendId} ${t.bucket}`, t]));
    expect(byKey['a photos']).toMatchObject({ puts: 1, gets: 1, heads: 1, bytesIn: 400, bytesOut: 300 });
    expect(byKey['a null']).toMatchObject({ lists: 1 });
    expect(byKey['b photos']).toMatchObject({ puts: 1, gets: 1, bytesIn: 300, bytesOut: 300 });
    expect(byKey['b logs']).toMatchObject({ deletes: 1 });
    expect(totals.backends.a!.ops.head?.requests).toBe(1);
  });

  it('a failed flush keeps its counts for the next one', async () => {
    const meter = new IsolateMeter();
    const sent: unknown[] = [];
    let fail = true;
    const flusher = new OpsFlusher(
      meter,
      async (d) => {
        if (fail) throw new Error('record unreachable');
        sent.push(d);
      },
      5000,
    );
    vi.spyOn(console, 'error').mockImplementation(() => {});
    meter.event('repairs_done', 2);
    await flusher.flush();
    expect(sent).toEqual([]);
    fail = false;
    meter.event('repairs_done');
    await flusher.flush();
    expect(sent).toMatchObject([{ events: { repairs_done: 3 } }]);
    await flusher.flush(); // nothing counted: nothing sent
    expect(sent).toHaveLength(1);
  });
});

describe('the shared record (OpsBook)', () => {
  it('adds deltas of one minute into one row, keeps all-time totals, answers the window asked for', () => {
    let now = Date.UTC(2026, 0, 1, 12, 0, 0);
    const book = new OpsBook(new MemoryBookStore(), () => now);
    const delta = (at: number, n: number) => ({ ...emptyCounters(), at, s3: { 'GetObject 200': n }, s3BytesOut: n * 10, events: {} });
    book.record(delta(now + 1000, 1));
    book.record(delta(now + 50_000, 2));
    book.record(delta(now + 61_000, 4));
    now += 120_000;
    const all = book.snapshot(0);
    expect(all.minutes.map((m) => [m.at - Date.UTC(2026, 0, 1, 12), m.counters.s3['GetObject 200']])).toEqual([
      [0, 3],
      [60_000, 4],
    ]);
    expect(all.totals.s3['GetObject 200']).toBe(7);
    expect(all.totals.s3BytesOut).toBe(70);
    expect(book.snapshot(Date.UTC(2026, 0, 1, 12, 1)).minutes).toHaveLength(1);
    book.sample({
      at: now,
      objects: 1,
      bytes: 1,
      storedBytes: 1,
      degradedObjects: 0,
      degradedUnits: 0,
      missingShards: 0,
      unitsAtRisk: 0,
      unitsLost: 0,
      garbageQueued: 0,
      garbageDue: 0,
      reservationsExpired: 0,
    });
    expect(book.snapshot(now - 1).samples).toHaveLength(1);
  });
});

describe('per-job traffic in the shared record', () => {
  it('merges per job and backend, keeps it in the totals only, and loads totals written before jobs were counted', () => {
    // Totals as the previous code stored them: no `jobs`.
    const stored = JSON.parse(
      '{"since":1000,"totals":{"backends":{"a":{"ops":{"get":{"requests":3,"errors":0,"bytes":30,"ms":3,"hist":[3,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}}}},"buckets":{"photos":{"a":{"requests":{"get":3},"bytesIn":0,"bytesOut":30}}},"s3":{},"s3BytesIn":0,"s3BytesOut":0,"events":{}}}',
    ) as { since: number; totals: OpsCounters };
    expect(trafficByJob(stored.totals)).toEqual([]);
    const store = new MemoryBookStore();
    store.saveTotals(stored.since, stored.totals);
    const at = Date.UTC(2026, 0, 1, 12);
    const book = new OpsBook(store, () => at);
    const job = { requests: { get: 2 }, bytesIn: 0, bytesOut: 20 };
    const delta = { ...emptyCounters(), at, buckets: { photos: { a: job } }, jobs: { move: { a: job } } };
    book.record(structuredClone(delta));
    book.record({ ...structuredClone(delta), jobs: { restripe: { a: { requests: { put: 1 }, bytesIn: 5, bytesOut: 0 } } } });
    const snap = book.snapshot(0);
    expect(snap.since).toBe(1000);
    expect(snap.totals.buckets!.photos!.a).toEqual({ requests: { get: 7 }, bytesIn: 0, bytesOut: 70 });
    expect(trafficByJob(snap.totals)).toEqual([
      { job: 'move', backendId: 'a', puts: 0, gets: 2, heads: 0, lists: 0, deletes: 0, bytesIn: 0, bytesOut: 20 },
      { job: 'restripe', backendId: 'a', puts: 1, gets: 0, heads: 0, lists: 0, deletes: 0, bytesIn: 5, bytesOut: 0 },
    ]);
    expect(snap.minutes).toHaveLength(1);
    expect(snap.minutes[0]!.counters.jobs).toBeUndefined();
    expect(snap.minutes[0]!.counters.buckets).toBeUndefined();
    // And the other way: a delta of the previous code (no `jobs`) into totals that have them.
    const into = structuredClone(snap.totals);
    addCounters(into, structuredClone(stored.totals));
    expect(into.jobs).toEqual(snap.totals.jobs);
    expect(into.buckets!.photos!.a!.bytesOut).toBe(100);
  });
});

describe('backend health', () => {
  const b = { id: 'x', domain: 'd' };
  it('unknown before any call; down when the latest call or probe failed; up when a later answer came', () => {
    expect(backendHealth(b, undefined, undefined, undefined).state).toBe('unknown');
    expect(backendHealth(b, { ops: {}, lastOkAt: 10, lastDownAt: 20 }, undefined, undefined)).toMatchObject({ state: 'down', reachable: false });
    expect(backendHealth(b, { ops: {}, lastOkAt: 10, lastDownAt: 20, probe: { at: 30, ok: true, ms: 1 } }, undefined, undefined).state).toBe('up');
    expect(backendHealth(b, { ops: {}, lastOkAt: 40, probe: { at: 50, ok: false, ms: 5000 } }, undefined, undefined).state).toBe('down');
    const recent = { ops: { get: { requests: 100, errors: 10, bytes: 0, ms: 0, hist: emptyHistogram() } } };
    expect(backendHealth(b, { ops: {}, lastOkAt: 40 }, recent, undefined)).toMatchObject({ state: 'degraded', recent: { errorRate: 0.1 } });
  });
});

async function statusOf(backends: MeteredBackend[], meter: IsolateMeter, catalog = localCatalog()) {
  const record = new MemoryOpsRecord();
  const ops = new OpsService({
    config: {
      backends: backends.map((x) => ({ id: x.id, domain: x.domain })),
      policies: { p: { codec: 'rs-cauchy-gf8', k: 1, m: 1 } },
      defaultPolicy: 'p',
      coder: { kernel: 'scalar', crc32: 'js' },
      scrubMode: 'heads',
      deployment: { mode: 'local', warnings: [] },
    },
    catalog,
    backends,
    meter,
    record,
    flusher: new OpsFlusher(meter, (d) => record.record(d), 5000),
    probeEveryMs: 30_000,
  });
  return { ops, ...(await ops.status({ signed: true, hours: 1, probe: true })) };
}

describe('Prometheus text', () => {
  it('is accepted by the official client, label values escaped, one family per name', async () => {
    const meter = new IsolateMeter();
    const odd = 'we"ird\\id\nx';
    const backends = [
      new MeteredBackend(new MemoryBackend({ id: odd, domain: 'd' }), (r) => meter.backendCall(r)),
      new MeteredBackend(new MemoryBackend({ id: 'plain', domain: 'd' }), (r) => meter.backendCall(r)),
    ];
    await backends[1]!.put('k', new Uint8Array(7), 7);
    const catalog = localCatalog();
    await catalog.insertBucket('b1', 'us-east-1');
    const { doc, totals } = await statusOf(backends, meter, catalog);
    const text = renderMetrics(doc, totals);
    const samples = await parseMetrics(text);
    expect(valueOf(samples, 'shardgate_backend_up', { backend: odd })).toBe(1); // the probe's NotFound is an answer
    expect(valueOf(samples, 'shardgate_backend_requests_total', { backend: 'plain', op: 'put' })).toBe(1);
    expect(valueOf(samples, 'shardgate_backend_requests_total', { backend: odd, op: 'head' })).toBe(1); // the probe
    expect(valueOf(samples, 'shardgate_bucket_objects', { bucket: 'b1' })).toBe(0);
    const types = text
      .split('\n')
      .filter((l) => l.startsWith('# TYPE '))
      .map((l) => l.split(' ')[2]);
    expect(new Set(types).size).toBe(types.length);
    for (const t of types) expect(t).toMatch(/^shardgate_[a-z0-9_]+$/);
    for (const l of text.split('\n').filter((x) => x.startsWith('# TYPE ') && x.endsWith(' counter'))) expect(l.split(' ')[2]).toMatch(/_total$/);
  });
});

describe('request log', () => {
  it('one JSON line per request: operation, bucket, key, status, bytes, backend calls', async () => {
    const meter = new IsolateMeter();
    const backends = Array.from({ length: 6 }, (_, i) => new MeteredBackend(new MemoryBackend({ id: `m${i}`, domain: `z${i}` }), (r) => meter.backendCall(r)));
    const config = parseConfig({
      backends: backends.map((x) => ({ id: x.id, kind: 'memory', domain: x.domain })),
      policies: { ec: { k: 4, m: 2, blockSize: 65536 } },
      defaultPolicy: 'ec',
    });
    const catalog = localCatalog();
    const store = new EcStore({ catalog, units: new UnitStore(backends), settings: engineSettings(config) });
    const record = new MemoryOpsRecord();
    const flusher = new OpsFlusher(meter, (d) => record.record(d), 5000);
    const app = createApp({
      store,
      config: store.config,
      authenticate: allowAllGate,
      settings: testS3Settings(),
      around: requestLog({ meter, flusher, log: true }),
    });
    const lines: Record<string, unknown>[] = [];
    vi.spyOn(console, 'log').mockImplementation((l: unknown) => void lines.push(JSON.parse(String(l))));
    await app.request('/logs', { method: 'PUT' });
    await app.request('/logs/a/b.txt', { method: 'PUT', body: new Uint8Array(10_000), headers: { 'content-length': '10000' } });
    await (await app.request('/logs/a/b.txt')).arrayBuffer();
    await app.request('/logs/missing');
    expect(lines.map((l) => [l.operation, l.bucket, l.key, l.status, l.bytesIn, l.bytesOut, l.backendCalls])).toEqual([
      ['CreateBucket', 'logs', undefined, 200, 0, 0, 0],
      ['PutObject', 'logs', 'a/b.txt', 200, 10_000, 0, 6], // k+m shard writes
      ['GetObject', 'logs', 'a/b.txt', 200, 0, 10_000, 4], // k data shards
      ['GetObject', 'logs', 'missing', 404, 0, expect.any(Number), 0],
    ]);
    expect(lines[3]!.error).toBe('NoSuchKey');
    expect(lines.every((l) => l.msg === 'request' && typeof l.requestId === 'string' && typeof l.ms === 'number')).toBe(true);
    await flusher.flush();
    const totals = (await record.snapshot(0)).totals;
    expect(totals.s3).toEqual({ 'CreateBucket 200': 1, 'PutObject 200': 1, 'GetObject 200': 1, 'GetObject 404': 1 });
    // Each request's time to its headers, by operation: the log line's ms in the histogram.
    const latency = totals.s3Latency!;
    expect(Object.keys(latency).sort()).toEqual(['CreateBucket', 'GetObject', 'PutObject']);
    expect(latency.GetObject!.count).toBe(2);
    expect(latency.GetObject!.ms).toBe((lines[2]!.ms as number) + (lines[3]!.ms as number));
    expect(latency.GetObject!.hist.reduce((a, b) => a + b, 0)).toBe(2);
    expect(latency.PutObject!.hist[bucketOf(lines[1]!.ms as number)]).toBe(1);
    // Usage per bucket (issue 45): the clients' requests naming it and their bytes, in and out.
    const notFound = lines[3]!.bytesOut as number;
    expect(totals.clients).toEqual({ logs: { requests: 4, bytesIn: 10_000, bytesOut: 10_000 + notFound } });
    await app.request('/other/x', { method: 'PUT', body: new Uint8Array(7), headers: { 'content-length': '7' } });
    await flusher.flush();
    expect((await record.snapshot(0)).totals.clients?.other).toEqual({ requests: 1, bytesIn: 7, bytesOut: expect.any(Number) });
    // Per minute rows leave it out (the totals keep it), as per-bucket backend traffic.
    const minutes = (await record.snapshot(0)).minutes;
    expect(minutes.length).toBeGreaterThan(0);
    expect(minutes.every((m) => !('clients' in m.counters))).toBe(true);
  });
});

describe('upkeep rates', () => {
  const MIN = 60_000,
    T0 = 100 * MIN;
  /** Minute rows as the shared record keeps them, from deltas flushed at the given times. */
  const rowsOf = (deltas: { at: number; events: Record<string, number> }[]) => {
    const book = new OpsBook(new MemoryBookStore(), () => T0);
    for (const d of deltas) book.record({ ...emptyCounters(), at: d.at, events: d.events });
    return book.snapshot(0).minutes;
  };

  it('a run of repairs: the rate from when it began, so the ETA is what the run will take (the drill: 5,015 s said, 25 s taken)', () => {
    // Repairs began 20 s ago (flushes every 5 s, 10 units each): 40 done, 50 left, at 2 units/s.
    const now = T0 + 4 * MIN + 30_000;
    const minutes = rowsOf([5, 10, 15, 20].map((s) => ({ at: now - 25_000 + s * 1000, events: { repairs_done: 10 } })));
    expect(upkeepRates(minutes, now, 50, 0)).toMatchObject({ repairUnitsPerMinute: 120, repairSecondsLeft: 25, repairActiveSince: now - 20_000 });
    // Averaged over the 5-minute window it said 8 units/min and 375 s: 15 times too long.
  });

  it('a run spanning minutes counts from its first minute; an earlier run, apart from it, does not count', () => {
    const now = T0 + 10 * MIN + 30_000;
    const minutes = rowsOf([
      { at: T0 + 6 * MIN + 10_000, events: { scrub_units: 1000 } }, // an earlier run, then a quiet minute
      { at: T0 + 8 * MIN + 30_000, events: { scrub_units: 300 } },
      { at: T0 + 9 * MIN + 30_000, events: { scrub_units: 600 } },
      { at: T0 + 10 * MIN + 20_000, events: { scrub_units: 300 } },
    ]);
    // 1200 units over the 120 s since the run began: 10 per second.
    expect(upkeepRates(minutes, now, 0, 600)).toMatchObject({
      scrubUnitsPerMinute: 600,
      scrubSecondsLeft: 60,
      scrubActiveSince: T0 + 8 * MIN + 30_000,
      repairSecondsLeft: 0,
    });
  });

  it('nothing done in the window: no rate, no time (stalled or not started)', () => {
    expect(upkeepRates([], T0, 7, 3)).toEqual({
      repairUnitsPerMinute: 0,
      repairSecondsLeft: null,
      repairActiveSince: null,
      scrubUnitsPerMinute: 0,
      scrubSecondsLeft: null,
      scrubActiveSince: null,
    });
  });
});

describe('S3 latency', () => {
  it('per operation in the status (window quantiles), the metrics (a histogram) and shardgate status', async () => {
    const meter = new IsolateMeter();
    for (const ms of [3, 4, 4, 40]) meter.s3Request('GetObject', 200, 0, 10, ms);
    meter.s3Request('PutObject', 200, 10, 0, 300);
    const backends = [new MeteredBackend(new MemoryBackend({ id: 'b', domain: 'd' }), (r) => meter.backendCall(r))];
    const { doc, totals } = await statusOf(backends, meter, localCatalog());
    expect(doc.s3.recent.GetObject).toMatchObject({ requests: 4 });
    expect(doc.s3.recent.GetObject!.p50Ms).toBeGreaterThan(2);
    expect(doc.s3.recent.GetObject!.p50Ms).toBeLessThanOrEqual(5);
    expect(doc.s3.recent.GetObject!.p99Ms).toBeGreaterThan(20);
    expect(doc.s3.recent.PutObject).toMatchObject({ requests: 1 });
    const samples = await parseMetrics(renderMetrics(doc, totals));
    expect(valueOf(samples, 'shardgate_s3_request_duration_seconds_bucket', { operation: 'GetObject', le: '0.005' })).toBe(3);
    expect(valueOf(samples, 'shardgate_s3_request_duration_seconds_bucket', { operation: 'GetObject', le: '+Inf' })).toBe(4);
    expect(valueOf(samples, 'shardgate_s3_request_duration_seconds_count', { operation: 'PutObject' })).toBe(1);
    expect(render(doc as unknown as StatusLike)).toMatch(
      /^S3 latency, last 5 minutes, to the response headers: GetObject 4x p50 [\d.]+ ms p99 [\d.]+ ms; PutObject 1x/m,
    );
  });
});

describe('operator routes: who may read', () => {
  async function routes(o: { open?: boolean; metricsToken?: string }) {
    const meter = new IsolateMeter();
    const { ops } = await statusOf([new MeteredBackend(new MemoryBackend({ id: 'm', domain: 'd' }), (r) => meter.backendCall(r))], meter);
    const app = new Hono<AppEnv>();
    app.route('/_shardgate', createOperator({ authenticate: allowAllGate, ops, open: o.open ?? false, metricsToken: o.metricsToken }));
    app.onError((err) => Response.json({ message: err.message }, { status: 403 }));
    return app;
  }

  it('metrics: refused unsigned, allowed with the bearer token or when open; status: public unless open', async () => {
    const closed = await routes({ metricsToken: 'tok-123' });
    expect((await closed.request('/_shardgate/metrics')).status).toBe(403);
    expect((await closed.request('/_shardgate/metrics', { headers: { authorization: 'Bearer tok-124' } })).status).toBe(403);
    expect((await closed.request('/_shardgate/metrics', { headers: { authorization: 'Bearer tok-123' } })).status).toBe(200);
    expect(await (await closed.request('/_shardgate/status')).json()).toMatchObject({ signed: false });
    const open = await routes({ open: true });
    expect((await open.request('/_shardgate/metrics')).status).toBe(200);
    expect(await (await open.request('/_shardgate/status')).json()).toMatchObject({ signed: true, buckets: [] });
    expect((await open.request('/_shardgate/status?hours=25')).status).toBe(403); // InvalidArgument, through this test's onError
  });
});
