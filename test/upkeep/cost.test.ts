/**
 * Cost accounting (issue 14): the report's arithmetic on known figures (worker/upkeep/cost.ts),
 * the upkeep jobs' lines (what part of it the mover and the re-stripe made, issue 26), the
 * stored-bytes listing (stored-bytes.ts), and the admin API's `costs` end to end in Node: the
 * real gate and admin app, EcStore over memory backends behind the traffic meter (MeteredBackend,
 * counted as the ops record counts: test/support/traffic-meter.ts), an object written and read
 * through S3, then the report: bytes stored as listed, requests and egress as counted, money at
 * the configured prices.
 */
import { AwsClient } from 'aws4fetch';
import { describe, expect, it } from 'vitest';
import { FaultyBackend, MemoryBackend } from '../../backends/index.ts';
import { createAdmin } from '../../worker/app/admin.ts';
import { createApp } from '../../worker/app/app.ts';
import { makeAuthenticate } from '../../worker/app/auth-gate.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { TrafficMeter } from '../support/traffic-meter.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { presetPrices } from '../../worker/config/price-list.ts';
import { costReport, type CostReport, type JobTraffic, type UpkeepJob } from '../../worker/upkeep/cost.ts';
import { measureStored } from '../../worker/upkeep/stored-bytes.ts';
import { testS3Settings } from '../support/memory-store.ts';
import { bucketPrefix, prefixesOf, shardKey, shelvedUnitId } from '../../worker/format/shard-key.ts';

const GiB = 1024 ** 3;
const AWS = presetPrices('aws-s3-standard');
const R2 = presetPrices('cloudflare-r2');
const close = (got: number | undefined, want: number) => expect(got).toBeCloseTo(want, 12);
const traffic = (
  backendId: string,
  bucket: string | null,
  t: Partial<Record<'puts' | 'gets' | 'heads' | 'lists' | 'deletes' | 'bytesIn' | 'bytesOut', number>>,
) => ({ backendId, bucket, puts: 0, gets: 0, heads: 0, lists: 0, deletes: 0, bytesIn: 0, bytesOut: 0, ...t });

describe('cost report', () => {
  it('known answers: storage per month, egress and requests per backend and per bucket; unpriced backends apart', () => {
    const r = costReport({
      backends: [
        { id: 'a', domain: 'aws' },
        { id: 'b', domain: 'r2' },
        { id: 'c', domain: 'minio' },
      ],
      prices: { a: AWS, b: R2, c: null },
      stored: [
        { backendId: 'a', bucket: 'bkt', bytes: 2 * GiB, shards: 10 },
        { backendId: 'b', bucket: 'bkt', bytes: 1 * GiB, shards: 10 },
        { backendId: 'a', bucket: 'logs', bytes: 1 * GiB, shards: 4 },
        { backendId: 'c', bucket: 'bkt', bytes: 5 * GiB, shards: 10 },
      ],
      traffic: [
        traffic('a', 'bkt', { gets: 1000, puts: 2000, deletes: 7, bytesOut: GiB, bytesIn: 3 * GiB }),
        traffic('b', 'bkt', { gets: 900, heads: 100, bytesOut: GiB }),
        traffic('a', null, { lists: 10 }),
        traffic('c', 'bkt', { gets: 5, bytesOut: GiB }),
      ],
      trafficSince: new Date('2026-12-01T00:00:00Z'),
      now: new Date('2026-12-01T01:00:00Z'),
    });
    const [a, b, c] = r.backends;
    // a (AWS): 3 GiB x $0.023; 1 GiB out x $0.09; (2000 PUTs + 10 lists) x $0.005/1000 + 1000 GETs x $0.0004/1000.
    expect(a!.usage).toEqual({ storedBytes: 3 * GiB, shards: 14, putRequests: 2010, getRequests: 1000, deleteRequests: 7, bytesIn: 3 * GiB, bytesOut: GiB });
    close(a!.cost!.storagePerMonth, 0.069);
    close(a!.cost!.egress, 0.09);
    close(a!.cost!.requests, 0.01045);
    close(a!.cost!.total, 0.16945);
    // b (R2): 1 GiB x $0.015; no egress fee; 1000 GET-class x $0.36/M.
    close(b!.cost!.total, 0.015 + 0.00036);
    expect(c).toMatchObject({ id: 'c', prices: null, cost: null, usage: { storedBytes: 5 * GiB, bytesOut: GiB } });
    const [bkt, logs] = r.buckets;
    expect(bkt!.bucket).toBe('bkt');
    // a's share of bkt: 2 GiB, its own egress and requests (not the listing over all buckets).
    close(bkt!.byBackend.a!.cost!.total, 2 * 0.023 + 0.09 + (2000 * 0.005 + 1000 * 0.0004) / 1000);
    expect(bkt!.byBackend.c!.cost).toBeNull();
    close(bkt!.cost!.total, 0.1464 + 0.01536);
    expect(bkt!.usage.storedBytes).toBe(8 * GiB);
    close(logs!.cost!.total, 0.023);
    close(r.total.total, 0.16945 + 0.01536);
    expect(r.trafficSince).toBe('2026-12-01T00:00:00.000Z');
  });
});

describe('cost report: upkeep jobs', () => {
  it("prices what each job asked of each backend at that backend's prices; the backend and bucket lines stay as counted", () => {
    const input = {
      backends: [
        { id: 'a', domain: 'aws' },
        { id: 'b', domain: 'r2' },
        { id: 'c', domain: 'minio' },
      ],
      prices: { a: AWS, b: R2, c: null },
      stored: [{ backendId: 'a', bucket: 'bkt', bytes: GiB, shards: 3 }],
      traffic: [
        traffic('a', 'bkt', { gets: 3000, heads: 10, puts: 500, bytesOut: 2 * GiB }),
        traffic('b', 'bkt', { puts: 2000, deletes: 4, bytesIn: GiB }),
        traffic('c', 'bkt', { gets: 8, bytesOut: GiB }),
      ],
      trafficSince: new Date('2026-12-01T00:00:00Z'),
      now: new Date('2026-12-01T01:00:00Z'),
    };
    const job = (name: UpkeepJob, backendId: string, t: Parameters<typeof traffic>[2]): JobTraffic => {
      const { bucket: _none, ...counts } = traffic(backendId, null, t);
      return { job: name, ...counts };
    };
    const jobs = [
      job('restripe', 'b', { puts: 1000, bytesIn: GiB / 2 }),
      job('move', 'a', { gets: 2000, heads: 10, bytesOut: GiB }),
      job('move', 'b', { puts: 500, lists: 1, bytesIn: GiB / 4 }),
      job('move', 'c', { gets: 4, bytesOut: GiB }),
    ];
    const withJobs = costReport({ ...input, jobs });
    const without = costReport(input);
    expect(without.jobs).toEqual([]);
    // A breakdown, not traffic besides: the other lines do not change.
    expect(withJobs.backends).toEqual(without.backends);
    expect(withJobs.buckets).toEqual(without.buckets);
    expect(withJobs.total).toEqual(without.total);
    expect(withJobs.jobs.map((j) => j.job)).toEqual(['move', 'restripe']);
    const [move, restripe] = withJobs.jobs;
    expect(move!.byBackend.a!.usage).toEqual({ storedBytes: 0, shards: 0, putRequests: 0, getRequests: 2010, deleteRequests: 0, bytesIn: 0, bytesOut: GiB });
    // a (AWS): 1 GiB out x $0.09; 2010 GET-class x $0.0004/1000.
    close(move!.byBackend.a!.cost!.egress, 0.09);
    close(move!.byBackend.a!.cost!.total, 0.09 + (2010 * 0.0004) / 1000);
    expect(move!.byBackend.a!.cost!.storagePerMonth).toBe(0);
    // b (R2): 501 PUT-class x $4.50/M, no egress fee.
    expect(move!.byBackend.b!.usage).toMatchObject({ putRequests: 501, bytesIn: GiB / 4 });
    close(move!.byBackend.b!.cost!.total, (501 * 0.0045) / 1000);
    expect(move!.byBackend.c!.cost).toBeNull();
    expect(move!.usage).toMatchObject({ getRequests: 2014, putRequests: 501, bytesOut: 2 * GiB, bytesIn: GiB / 4, storedBytes: 0 });
    // The job's total: over its priced backends (c's egress is unpriced).
    close(move!.cost!.total, 0.09 + (2010 * 0.0004) / 1000 + (501 * 0.0045) / 1000);
    expect(Object.keys(restripe!.byBackend)).toEqual(['b']);
    close(restripe!.cost!.requests, (1000 * 0.0045) / 1000);
    // Only unpriced backends: the job's cost is null, as a bucket's would be.
    expect(costReport({ ...input, jobs: [jobs[3]!] }).jobs[0]!.cost).toBeNull();
  });
});

describe('stored bytes', () => {
  it('lists shard keys per backend and bucket, within a page budget, and reports a backend that fails', async () => {
    const a = new MemoryBackend({ id: 'a', domain: 'x' }),
      b = new FaultyBackend(new MemoryBackend({ id: 'b', domain: 'y' }));
    for (let i = 0; i < 5; i++) await a.put(shardKey('one', `u${i}`, 0), new Uint8Array(100 + i), 100 + i);
    await a.put(shardKey('two', 'u9', 3), new Uint8Array(7), 7);
    await a.put(shardKey('two', shelvedUnitId('ab12', 'u7'), 0), new Uint8Array(3), 3); // listed by its shelf
    await a.put('other/file', new Uint8Array(1000), 1000);
    await b.put(shardKey('one', 'u1', 1), new Uint8Array(50), 50);
    const all = await measureStored([a, b], { maxPagesPerBackend: 10 });
    expect(all.stored.sort((x, y) => (x.backendId + x.bucket < y.backendId + y.bucket ? -1 : 1))).toEqual([
      { backendId: 'a', bucket: '_ab12', bytes: 3, shards: 1 },
      { backendId: 'a', bucket: 'one', bytes: 510, shards: 5 },
      { backendId: 'a', bucket: 'two', bytes: 7, shards: 1 },
      { backendId: 'b', bucket: 'one', bytes: 50, shards: 1 },
    ]);
    expect(all.complete).toEqual({ a: true, b: true });
    expect((await measureStored([a], { prefixes: [bucketPrefix('two')], maxPagesPerBackend: 10 })).stored).toEqual([
      { backendId: 'a', bucket: 'two', bytes: 7, shards: 1 },
    ]);
    expect((await measureStored([a], { prefixes: prefixesOf('two', ['ab12']), maxPagesPerBackend: 10 })).stored).toEqual([
      { backendId: 'a', bucket: 'two', bytes: 7, shards: 1 },
      { backendId: 'a', bucket: '_ab12', bytes: 3, shards: 1 },
    ]);
    b.goOffline();
    const down = await measureStored([a, b], { maxPagesPerBackend: 10 });
    expect(down.complete).toEqual({ a: true, b: false });
    expect(down.errors.b).toMatch(/Unavailable/);
  });
});

describe('admin costs', () => {
  const KEY = { accessKeyId: 'ops', secretAccessKey: 'ops-secret-for-tests' };

  function gateway() {
    const meter = new TrafficMeter();
    const raw = Array.from({ length: 6 }, (_, i) => new MemoryBackend({ id: `m${i}`, domain: `d${i}` }));
    const backends = raw.map((b) => meter.wrap(b));
    const config = parseConfig({
      backends: raw.map((b, i) => ({ id: b.id, kind: 'memory', domain: b.domain, prices: i < 2 ? 'aws-s3-standard' : i < 5 ? 'cloudflare-r2' : 'none' })),
      policies: { ec: { k: 4, m: 2, blockSize: 65536, small: { threshold: 0 } } },
      defaultPolicy: 'ec',
      credentials: [KEY],
    });
    const catalog = localCatalog();
    const store = new EcStore({ catalog, units: new UnitStore(backends), settings: engineSettings(config) });
    const authenticate = makeAuthenticate(config, {});
    const admin = createAdmin({
      authenticate,
      catalog,
      backends,
      region: 'us-east-1',
      scrub: { mode: 'heads', unitsPerRun: 10 },
      enqueueRepair: () => {},
      repair: async () => {},
      costs: { traffic: meter.source, prices: config.backendPrices },
    });
    const app = createApp({ store, config: store.config, authenticate, settings: testS3Settings(), admin });
    const client = new AwsClient({ ...KEY, service: 's3', region: 'us-east-1', retries: 0 });
    const send = async (url: string, init: RequestInit = {}) => {
      const headers: Record<string, string> = init.body instanceof Uint8Array ? { 'content-length': String(init.body.length) } : {};
      return app.fetch(await client.sign(`http://gw.test${url}`, { ...init, headers }));
    };
    return { raw, send };
  }

  it('reports bytes stored as the backends hold them, requests and egress as counted, at the configured prices', async () => {
    const g = gateway();
    expect((await g.send('/photos', { method: 'PUT' })).status).toBe(200);
    const body = new Uint8Array(4 * 65536 * 3).map((_, i) => i % 251);
    expect((await g.send('/photos/cat.jpg', { method: 'PUT', body })).status).toBe(200);
    const got = await g.send('/photos/cat.jpg');
    expect(new Uint8Array(await got.arrayBuffer())).toEqual(body);

    const res = await g.send('/_shardgate/admin/costs', { method: 'POST' });
    expect(res.status).toBe(200);
    const report = (await res.json()) as CostReport & { storedListing: { complete: Record<string, boolean>; listRequests: number } };
    expect(Object.values(report.storedListing.complete).every(Boolean)).toBe(true);
    // Every shard file is on its backend: bytes as the backend reports them.
    for (const b of report.backends) {
      const held = (await g.raw.find((r) => r.id === b.id)!.list(bucketPrefix('photos'))).entries.reduce((s, e) => s + e.size, 0);
      expect(b.usage.storedBytes, b.id).toBe(held);
      expect(b.usage.shards, b.id).toBe(1);
      expect(b.usage.putRequests, b.id).toBe(1 + 1); // the shard's PUT, then this report's listing
    }
    // The healthy GET read the 4 data shards: 4 GETs, each a shard's data blocks out.
    const gets = report.backends.map((b) => b.usage.getRequests);
    expect(gets.reduce((s, n) => s + n, 0)).toBe(4);
    for (const b of report.backends) {
      const expected = b.prices
        ? (b.usage.storedBytes / 1024 ** 3) * b.prices.storagePerGBMonth +
          (b.usage.bytesOut / 1024 ** 3) * b.prices.egressPerGB +
          (b.usage.putRequests * b.prices.putPer1000 + b.usage.getRequests * b.prices.getPer1000) / 1000
        : null;
      if (expected === null) expect(b.cost, `${b.id} is unpriced`).toBeNull();
      else close(b.cost!.total, expected);
    }
    expect(report.backends.map((b) => b.prices?.source ?? null)).toEqual([
      'preset aws-s3-standard',
      'preset aws-s3-standard',
      'preset cloudflare-r2',
      'preset cloudflare-r2',
      'preset cloudflare-r2',
      null,
    ]);
    expect(report.buckets.map((b) => b.bucket)).toEqual(['photos']);
    close(
      report.total.total,
      report.backends.reduce((s, b) => s + (b.cost?.total ?? 0), 0),
    );
  });

  it('?bucket= narrows the report; a bad bucket name or page budget is refused', async () => {
    const g = gateway();
    for (const bucket of ['a-bucket', 'b-bucket']) {
      expect((await g.send(`/${bucket}`, { method: 'PUT' })).status).toBe(200);
      expect((await g.send(`/${bucket}/k`, { method: 'PUT', body: new Uint8Array(300_000) })).status).toBe(200);
    }
    const report = (await (await g.send('/_shardgate/admin/costs?bucket=b-bucket', { method: 'POST' })).json()) as CostReport;
    expect(report.buckets.map((b) => b.bucket)).toEqual(['b-bucket']);
    expect((await g.send('/_shardgate/admin/costs?bucket=Bad_Name', { method: 'POST' })).status).toBe(400);
    expect((await g.send('/_shardgate/admin/costs?maxPages=0', { method: 'POST' })).status).toBe(400);
  });
});
