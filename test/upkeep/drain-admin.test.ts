/**
 * The admin API of a drain (issue 26), signed as `shardgate drain` signs it, over memory backends
 * and the product's catalog: drain-estimate prices the move (and, with rebalance=1, a rebalance
 * onto an active backend) before anything moves, drain moves
 * and answers the progress, drain-status says what is left (0 at the end), a backend the
 * estimate does not know is refused naming the configured ones, and afterwards the cost report's
 * `jobs` says what the mover asked of each backend (run inside the meter's job, as gateway.ts
 * runs it), to set beside the estimate.
 */
import { readBytes } from '../support/read-bytes.ts';
import { AwsClient } from 'aws4fetch';
import { describe, expect, it } from 'vitest';
import { MemoryBackend } from '../../backends/index.ts';
import { createAdmin } from '../../worker/app/admin.ts';
import { measuredText, type Measured } from '../../cli/commands/drain.ts';
import { createApp } from '../../worker/app/app.ts';
import { makeAuthenticate } from '../../worker/app/auth-gate.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { drainBatch, type FleetBackend } from '../../worker/upkeep/drain.ts';
import type { DrainEstimate } from '../../worker/upkeep/drain-estimate.ts';
import type { BackendDrainProgress } from '../../worker/upkeep/drain-progress.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { testS3Settings } from '../support/memory-store.ts';
import { TrafficMeter } from '../support/traffic-meter.ts';
import type { CostReport } from '../../worker/upkeep/cost.ts';

const KEY = { accessKeyId: 'ops', secretAccessKey: 'ops-secret-for-tests' };

describe('admin drain, drain-status, drain-estimate', () => {
  it('prices the drain first, moves on request, and reports what is left', async () => {
    const backends = Array.from({ length: 7 }, (_, i) => new MemoryBackend({ id: `m${i}`, domain: `d${i}` }));
    const configOf = (draining: boolean) =>
      parseConfig({
        backends: backends.map((b) => ({
          id: b.id,
          kind: 'memory',
          domain: b.domain,
          prices: 'aws-s3-standard',
          ...(draining && b.id === 'm2' ? { state: 'draining' } : {}),
        })),
        policies: { ec: { k: 4, m: 2, blockSize: 65536, small: { threshold: 0 } } },
        defaultPolicy: 'ec',
        credentials: [KEY],
      });
    const catalog = localCatalog({ garbageGraceMs: 0 });
    // Written while all seven were active.
    const before = configOf(false);
    const writer = new EcStore({ catalog, units: new UnitStore(backends), settings: engineSettings(before) });
    await writer.createBucket('photos', { region: 'us-east-1' });
    for (let i = 0; i < 30; i++)
      await writer.putObject('photos', `p${i}`, new ReadableStream({ start: (c) => (c.enqueue(new Uint8Array(70_000).fill(i)), c.close()) }), {
        contentLength: 70_000,
        metadata: { user: {} },
        checksum: null,
        conditions: {},
      });

    const config = configOf(true);
    const fleet: FleetBackend[] = config.backends.map((b) => ({ id: b.id, domain: b.domain, state: b.state }));
    // From here on counted, as the gateway counts its backends' calls.
    const meter = new TrafficMeter();
    const byId = new Map(backends.map((b) => [b.id, meter.wrap(b)]));
    const store = new EcStore({
      catalog,
      units: new UnitStore(backends, () => {}, { placeOn: fleet.filter((b) => b.state === 'active').map((b) => b.id) }),
      settings: engineSettings(config),
    });
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
      drain: {
        fleet,
        run: (o) => meter.job('move', () => drainBatch({ catalog, backends: byId, graceMs: 0, fleet }, { ...o, deadline: Date.now() + 30_000 })),
      },
    });
    const app = createApp({ store, config: store.config, authenticate, settings: testS3Settings(), admin });
    const client = new AwsClient({ ...KEY, service: 's3', region: 'us-east-1', retries: 0 });
    const post = async (path: string) => {
      const res = await app.fetch(await client.sign(`http://gw.test/_shardgate/admin/${path}`, { method: 'POST' }));
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };

    const estimate = (await post('drain-estimate?backend=m2')).body as unknown as DrainEstimate;
    const onM2 = (await post('drain-status')).body.backends as BackendDrainProgress[];
    expect(onM2).toHaveLength(1);
    expect(estimate.shards).toBe(onM2[0]!.left.shards);
    expect(estimate.shards).toBeGreaterThan(10);
    expect(estimate.total.puts).toBe(estimate.shards);
    expect(estimate.total.gets).toBe(4 * estimate.shards);
    expect(estimate.total.cost).toBeGreaterThan(0);
    expect(estimate.byBackend.m2!.usage.deleteRequests).toBe(estimate.shards);
    expect((await post('drain-estimate?backend=nope')).body).toMatchObject({ message: expect.stringContaining('m0, m1, m2') });
    // A rebalance is priced the same way, onto an active backend only: every object was written
    // with m6 active, so placement gave it its shards then; the units that placement now gives it
    // because m2 is leaving are the drain's (priced above), so nothing more would move (the
    // estimate of real rebalance moves is checked against a run in drain.test.ts).
    const onto = (await post('drain-estimate?backend=m6&rebalance=1')).body as unknown as DrainEstimate;
    expect(onto).toMatchObject({ backend: 'm6', shards: 0, complete: true, total: { gets: 0, puts: 0, deletes: 0 } });
    expect(onto.unitsWalked).toBeGreaterThanOrEqual(30);
    expect((await post('drain-estimate?backend=m2&rebalance=1')).body).toMatchObject({ message: expect.stringContaining('m2 is not active') });

    const first = (await post('drain?max=5')).body as { copied: number; progress: BackendDrainProgress[] };
    expect(first.copied).toBe(5);
    expect(first.progress[0]!.left.shards).toBe(estimate.shards - 5);
    const rest = (await post('drain?max=1000')).body as { copied: number; progress: BackendDrainProgress[] };
    expect(rest.copied).toBe(estimate.shards - 5);
    const status = (await post('drain-status')).body.backends as BackendDrainProgress[];
    expect(status[0]).toMatchObject({
      backend: 'm2',
      state: 'draining',
      left: { shards: 0, bytes: 0 },
      moved: { shards: estimate.shards, bytes: estimate.bytes },
    });

    // What the mover asked, measured, beside what the estimate said: the same GETs, PUTs and
    // egress per backend; the DELETEs of the old copies are the collector's, not the mover's.
    const costs = (await post('costs')).body as unknown as CostReport;
    expect(costs.jobs.map((j) => j.job)).toEqual(['move']);
    const move = costs.jobs[0]!;
    const touched = Object.keys(estimate.byBackend)
      .filter((id) => estimate.byBackend[id]!.usage.getRequests + estimate.byBackend[id]!.usage.putRequests > 0)
      .sort();
    expect(Object.keys(move.byBackend).sort()).toEqual(touched);
    for (const id of touched) {
      const [measured, estimated] = [move.byBackend[id]!.usage, estimate.byBackend[id]!.usage];
      expect([measured.getRequests, measured.putRequests, measured.bytesOut, measured.bytesIn], id).toEqual([
        estimated.getRequests,
        estimated.putRequests,
        estimated.bytesOut,
        estimated.bytesIn,
      ]);
      expect(measured.deleteRequests, id).toBe(0);
      // Included in the backend's line, not besides it.
      const line = costs.backends.find((b) => b.id === id)!.usage;
      expect(line.getRequests).toBeGreaterThanOrEqual(measured.getRequests);
      expect(line.putRequests).toBeGreaterThanOrEqual(measured.putRequests);
    }
    expect(move.usage.getRequests).toBe(estimate.total.gets);
    expect(move.usage.putRequests).toBe(estimate.total.puts);
    expect(move.usage.bytesOut).toBe(estimate.total.egressBytes);
    expect(move.cost!.total).toBeGreaterThan(0);
    // drain-status carries the same line (what `shardgate drain` prints beside the progress).
    const measured = (await post('drain-status')).body.measured as Measured & { usage: CostReport['jobs'][number]['usage'] };
    expect(measured.usage).toEqual(move.usage);
    expect(measured.cost!.total).toBeCloseTo(move.cost!.total, 12);
    expect(measuredText(measured)).toContain(`${estimate.total.gets} GETs, ${estimate.total.puts} PUTs`);
    expect(measuredText({ ...measured, usage: { getRequests: 0, putRequests: 0, deleteRequests: 0, bytesOut: 0 } })).toBe('');
    for (let i = 0; i < 30; i++) {
      const got = await store.getObject('photos', `p${i}`, { conditions: {} });
      expect(await readBytes(got.body)).toEqual(new Uint8Array(70_000).fill(i));
    }
  });
});
