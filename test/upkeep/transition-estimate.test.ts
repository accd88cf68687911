/**
 * `lifecycle-estimate` (issue 44) through the admin API, signed as `shardgate lifecycle
 * --estimate` signs it, over memory backends and the product's catalog: per horizon (now, and N
 * lifecycle days on) the versions each rule moves and their bytes, what it asks of each backend
 * priced, and the storage change; versions that cannot move (SSE-C) are counted blocked, those
 * whose class's policy stores them as they are only change class for no request. Then the job
 * runs, its transitions inside the meter's 'transition' job as gateway.ts runs them, and the cost
 * report's `transition` line (and the estimate's `measured`) shows what was asked: the same GETs,
 * PUTs and egress per backend as estimated. Bad parameters are refused with the S3 error.
 */
import { createHash } from 'node:crypto';
import { AwsClient } from 'aws4fetch';
import { describe, expect, it } from 'vitest';
import { MemoryBackend } from '../../backends/index.ts';
import { command as lifecycle, estimateText } from '../../cli/commands/lifecycle.ts';
import { createAdmin } from '../../worker/app/admin.ts';
import { createApp } from '../../worker/app/app.ts';
import { makeAuthenticate } from '../../worker/app/auth-gate.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { toBase64 } from '../../worker/model/bytes.ts';
import type { SseRequest } from '../../worker/model/sse.ts';
import type { CostReport } from '../../worker/upkeep/cost.ts';
import { lifecycleBatch } from '../../worker/upkeep/lifecycle.ts';
import { estimateTransitions, type TransitionEstimate } from '../../worker/upkeep/transition-estimate.ts';
import { Transitioner } from '../../worker/upkeep/transition.ts';
import { DEV_KEY_RING } from '../support/dev-encryption.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { testS3Settings } from '../support/memory-store.ts';
import { prng, randomBytes } from '../support/random.ts';
import { TrafficMeter } from '../support/traffic-meter.ts';

const KEY = { accessKeyId: 'ops', secretAccessKey: 'ops-secret-for-tests' };
const DAY = 60_000;
const body = (b: Uint8Array) => new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(b), c.close()) });
const customerKey = new Uint8Array(32).fill(7);
const SSE_C: SseRequest = { kind: 'c', key: customerKey, keyMD5: toBase64(createHash('md5').update(customerKey).digest()) };

describe('admin lifecycle-estimate', () => {
  it('bills the transitions before they run, and the cost report measures the same requests after', async () => {
    const backends = Array.from({ length: 8 }, (_, i) => new MemoryBackend({ id: `m${i}`, domain: `d${i}` }));
    const config = parseConfig({
      backends: backends.map((b, i) => ({ id: b.id, kind: 'memory', domain: b.domain, prices: i < 4 ? 'cloudflare-r2' : 'backblaze-b2' })),
      policies: {
        hot: { k: 4, m: 2, blockSize: 4096 },
        cold: { k: 4, m: 1, blockSize: 4096 },
        archive: { k: 5, m: 1, blockSize: 4096 },
      },
      defaultPolicy: 'hot',
      // ONEZONE_IA names the bucket's own policy: a move there changes only the class.
      storageClasses: { STANDARD_IA: 'cold', GLACIER: 'archive', ONEZONE_IA: 'hot' },
      credentials: [KEY],
    });
    const settings = engineSettings(config);
    const catalog = localCatalog({ garbageGraceMs: 60_000 });
    const meter = new TrafficMeter();
    const units = new UnitStore(
      backends.map((b) => meter.wrap(b)),
      () => {},
      { keyRing: DEV_KEY_RING },
    );
    const store = new EcStore({ catalog, units, settings });
    await store.createBucket('bkt', { region: 'us-east-1' });
    await store.config.putBucketLifecycle('bkt', [
      { id: 'ia', status: 'Enabled', filter: { prefix: 'cold/' }, transitions: [{ days: 1, storageClass: 'STANDARD_IA' }] },
      { id: 'archive', status: 'Enabled', filter: { prefix: 'arch/' }, transitions: [{ days: 3, storageClass: 'GLACIER' }] },
      { id: 'same', status: 'Enabled', filter: { prefix: 'same/' }, transitions: [{ days: 1, storageClass: 'ONEZONE_IA' }] },
    ]);
    const random = prng(7);
    const sizes: Record<string, number> = {};
    const write = async (key: string, size: number, extra: Record<string, unknown> = {}) => {
      const b = randomBytes(random, size);
      sizes[key] = size;
      await store.putObject('bkt', key, body(b), { contentLength: size, metadata: { user: {} }, checksum: null, conditions: {}, ...extra });
    };
    for (let i = 0; i < 4; i++) await write(`cold/${i}`, 9000 + i * 7000);
    for (let i = 0; i < 3; i++) await write(`arch/${i}`, 20_000 + i * 1000);
    await write('same/0', 12_000);
    await write('cold/secret', 10_000, { sse: SSE_C });
    await write('hot/0', 15_000);

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
      lifecycle: {
        store: { deleteObject: store.deleteObject, abortMultipartUpload: store.abortMultipartUpload },
        dayMs: DAY,
        estimate: (bucket, afterDays, rules) =>
          estimateTransitions({
            catalog,
            units,
            settings,
            bucket,
            prices: config.backendPrices,
            afterDays,
            dayMs: DAY,
            now: Date.now(),
            ...(rules ? { rules } : {}),
          }),
      },
    });
    const app = createApp({ store, config: store.config, authenticate, settings: testS3Settings(), admin });
    const client = new AwsClient({ ...KEY, service: 's3', region: 'us-east-1', retries: 0 });
    const post = async (path: string) => {
      const res = await app.fetch(await client.sign(`http://gw.test/_shardgate/admin/${path}`, { method: 'POST' }));
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };

    const answer = await post('lifecycle-estimate?bucket=bkt&days=2,5');
    expect(answer.status).toBe(200);
    const e = answer.body as unknown as TransitionEstimate & { measured: { usage: { getRequests: number } } | null };
    expect(e).toMatchObject({ bucket: 'bkt', versionsWalked: 10, complete: true, unpriced: [] });
    expect(e.horizons.map((h) => h.afterDays)).toEqual([0, 2, 5]);
    const [now, two, five] = e.horizons as [
      TransitionEstimate['horizons'][number],
      TransitionEstimate['horizons'][number],
      TransitionEstimate['horizons'][number],
    ];
    expect(now).toMatchObject({ versions: 0, blocked: 0, total: { gets: 0, puts: 0, cost: 0 } });
    const coldBytes = [0, 1, 2, 3].reduce((n, i) => n + sizes[`cold/${i}`]!, 0);
    const archBytes = [0, 1, 2].reduce((n, i) => n + sizes[`arch/${i}`]!, 0);
    expect(two).toMatchObject({ versions: 5, bytes: coldBytes + sizes['same/0']!, reclassed: 1, blocked: 1 });
    expect(two.rules).toEqual([
      { ruleId: 'ia', storageClass: 'STANDARD_IA', versions: 4, bytes: coldBytes },
      { ruleId: 'same', storageClass: 'ONEZONE_IA', versions: 1, bytes: sizes['same/0'] },
    ]);
    // The four cold versions: 4 data shards read, 5 shards written, 6 old shards deleted each.
    expect(two.total).toMatchObject({ gets: 16, puts: 20, deletes: 24 });
    expect(five).toMatchObject({ versions: 8, reclassed: 1, blocked: 1, total: { gets: 16 + 12, puts: 20 + 18, deletes: 24 + 18 } });
    expect(five.rules.find((r) => r.ruleId === 'archive')).toEqual({ ruleId: 'archive', storageClass: 'GLACIER', versions: 3, bytes: archBytes });
    // Priced: B2 charges egress, R2 PUTs; both store less once moved (1.5x to 1.25x and 1.2x).
    expect(five.total.cost).toBeGreaterThan(two.total.cost);
    expect(two.storagePerMonthChange).toBeLessThan(0);
    expect(five.storagePerMonthChange).toBeLessThan(two.storagePerMonthChange);
    expect(e.measured?.usage.getRequests).toBe(0);
    // A walk cut at its limit says so, and covers the versions it walked (the first keys: arch/).
    const partial = await estimateTransitions({
      catalog,
      units,
      settings,
      bucket: 'bkt',
      prices: {},
      afterDays: [5],
      dayMs: DAY,
      now: Date.now(),
      maxVersions: 3,
    });
    expect(partial).toMatchObject({ versionsWalked: 3, complete: false });
    expect(partial.horizons[1]).toMatchObject({ versions: 3, bytes: archBytes });
    expect(partial.unpriced.length).toBeGreaterThan(0);
    const text = estimateText(e as never);
    expect(text).toContain('due now: 0 version(s)');
    expect(text).toMatch(/due by 5 day\(s\) from now .*: 8 version\(s\).*\(1 only change class\); 1 blocked/);
    expect(text).toContain('archive  GLACIER');

    // The job runs 5 days on, its transitions counted as the gateway counts them.
    const deps = { catalog, units, settings, graceMs: 60_000, writeReservationSeconds: 3600, fleet: [] };
    const transitioner = new Transitioner(deps, { maxVersions: 100, maxRequests: 10_000, deadline: Date.now() + 60_000 });
    const report = await lifecycleBatch(
      catalog,
      {
        deleteObject: store.deleteObject,
        abortMultipartUpload: store.abortMultipartUpload,
        transition: (b, k, v, c) => meter.job('transition', () => transitioner.transition(b, k, v, c)),
      },
      { dayMs: DAY, now: () => Date.now() + 5 * DAY },
    );
    expect(report).toMatchObject({ transitioned: 8, transitionsBlocked: 1, failed: 0 });
    const costs = (await post('costs')).body as unknown as CostReport;
    const line = costs.jobs.find((j) => j.job === 'transition')!;
    for (const [id, estimated] of Object.entries(five.byBackend)) {
      const measured = line.byBackend[id]?.usage ?? { getRequests: 0, putRequests: 0, bytesOut: 0 };
      expect([measured.getRequests, measured.putRequests, measured.bytesOut], id).toEqual([
        estimated.usage.getRequests,
        estimated.usage.putRequests,
        estimated.usage.bytesOut,
      ]);
    }
    expect(Math.abs(line.usage.bytesIn - five.total.ingressBytes) / line.usage.bytesIn).toBeLessThan(0.05);
    expect(line.cost!.total).toBeGreaterThan(0);
    // The estimate now carries what was measured, and nothing is left due.
    const after = (await post('lifecycle-estimate?bucket=bkt&days=5')).body as unknown as TransitionEstimate & {
      measured: { usage: { getRequests: number; putRequests: number } };
    };
    expect(after.measured.usage).toMatchObject({ getRequests: five.total.gets, putRequests: five.total.puts });
    expect(after.horizons[1]).toMatchObject({ versions: 0, blocked: 1 });

    // Rules not set yet, priced before they are: everything to GLACIER at once (Days 0).
    const rule = (cls: string) =>
      `<LifecycleConfiguration><Rule><ID>all</ID><Filter><Prefix></Prefix></Filter><Status>Enabled</Status><Transition><Days>0</Days><StorageClass>${cls}</StorageClass></Transition></Rule></LifecycleConfiguration>`;
    const given = (await post(`lifecycle-estimate?bucket=bkt&rules=${encodeURIComponent(rule('GLACIER'))}`)).body as unknown as TransitionEstimate;
    expect(given).toMatchObject({ rules: 'given', versionsWalked: 10 });
    // Now: the 7 on STANDARD_IA, hot/0 and same/0 on the bucket's policy move to 5+1; cold/secret stays (SSE-C); arch/ is GLACIER already.
    expect(given.horizons[0]).toMatchObject({ afterDays: 0, versions: 6, reclassed: 0, blocked: 1 });
    expect(given.horizons[0]!.rules).toEqual([{ ruleId: 'all', storageClass: 'GLACIER', versions: 6, bytes: coldBytes + sizes['same/0']! + sizes['hot/0']! }]);
    expect(estimateText({ ...given, measured: null } as never)).toContain('under the rules given (not set)');
    expect((await catalog.getLifecycleRun('bkt')).rules?.map((r) => r.id)).toEqual(['ia', 'archive', 'same']); // nothing set
    expect((await post(`lifecycle-estimate?bucket=bkt&rules=${encodeURIComponent(rule('DEEP_ARCHIVE'))}`)).body).toMatchObject({ code: 'InvalidStorageClass' });
    expect((await post(`lifecycle-estimate?bucket=bkt&rules=${encodeURIComponent('<LifecycleConfiguration><Rule>')}`)).body).toMatchObject({
      code: 'MalformedXML',
    });

    // Refused: no bucket, a bad bucket name, bad days, an unknown bucket.
    expect((await post('lifecycle-estimate')).body).toMatchObject({ code: 'InvalidArgument' });
    expect((await post('lifecycle-estimate?bucket=Bad_Name')).body).toMatchObject({ code: 'InvalidBucketName' });
    expect((await post('lifecycle-estimate?bucket=bkt&days=x')).body).toMatchObject({ code: 'InvalidArgument' });
    expect((await post('lifecycle-estimate?bucket=bkt&days=-1')).body).toMatchObject({ code: 'InvalidArgument' });
    expect((await post('lifecycle-estimate?bucket=nope')).body).toMatchObject({ code: 'NoSuchBucket' });
  });

  it('shardgate lifecycle refuses what it cannot mean before calling the gateway', async () => {
    await expect(lifecycle.run(['--days', '30'])).rejects.toThrow(/--days goes with --estimate BUCKET/);
    await expect(lifecycle.run(['--rules', 'x.xml'])).rejects.toThrow(/--rules goes with --estimate BUCKET/);
    await expect(lifecycle.run(['--estimate', 'bkt', '--all'])).rejects.toThrow(/does not go with --all/);
    await expect(lifecycle.run(['--estimate', 'bkt', '--days', '30,x'])).rejects.toThrow(/whole numbers of days/);
    await expect(lifecycle.run(['--estimate', 'bkt', '--rules', '/nonexistent/rules.xml'])).rejects.toThrow(/cannot read/);
  });
});
