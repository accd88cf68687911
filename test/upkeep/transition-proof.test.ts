/**
 * The proof of issue 44's transitions, at scale: a versioned bucket of many keys with several
 * versions each (most of them noncurrent) under a rule that moves current and noncurrent versions
 * to STANDARD_IA (4+2 to 4+1) one short lifecycle day after they were written or became
 * noncurrent, the clock driven by the test (no waiting). Before anything runs, the estimate
 * (upkeep/transition-estimate.ts) says what will move and what it will ask; then the lifecycle job
 * runs, its transitions counted apart as the gateway counts them (IsolateMeter job 'transition',
 * over MeteredBackend), while client GETs of random versions run all along. Proven: every version
 * moves (class, 4+1 units, every shard file on its backend), reads back byte-identical during and
 * after with no failed read, the old shards are collected (the backends hold exactly the new
 * ones), and the estimate's GETs, PUTs, egress, bytes written and the collector's DELETEs are
 * within 5% of what was measured.
 * Size: 1,000 versions under SHARDGATE_FULL_SIZE=1 (npm run test:full), 60 in npm test
 * (TRANSITION_PROOF_VERSIONS overrides).
 */
import { describe, expect, it } from 'vitest';
import { MemoryBackend, type Backend } from '../../backends/index.ts';
import { MeteredBackend } from '../../backends/metered.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { shardKey } from '../../worker/format/shard-key.ts';
import { trafficByJob } from '../../worker/ops/counters.ts';
import { IsolateMeter } from '../../worker/ops/meter.ts';
import type { OpsDelta } from '../../worker/ops/types.ts';
import { collectGarbage } from '../../worker/upkeep/collector.ts';
import { lifecycleBatch, type LifecycleStore } from '../../worker/upkeep/lifecycle.ts';
import { estimateTransitions } from '../../worker/upkeep/transition-estimate.ts';
import { Transitioner } from '../../worker/upkeep/transition.ts';
import { DEV_KEY_RING } from '../support/dev-encryption.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { prng, randomBytes } from '../support/random.ts';
import { readBytes } from '../support/read-bytes.ts';

const VERSIONS = Number(process.env.TRANSITION_PROOF_VERSIONS ?? (process.env.SHARDGATE_FULL_SIZE === '1' ? 1000 : 60));
const PER_KEY = 10;
/** A short lifecycle day: longer than writing the bucket takes, so nothing is due before the clock is moved on. */
const DAY = 600_000;
const GRACE = 60_000;
const READERS = 3;
const body = (b: Uint8Array) => new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(b), c.close()) });
const put = (n: number) => ({ contentLength: n, metadata: { user: {} }, checksum: null, conditions: {} });
/** Prices of two providers, so the estimate has something to price (R2's and B2's list prices). */
const R2 = { storagePerGBMonth: 0.015, egressPerGB: 0, putPer1000: 0.0045, getPer1000: 0.00036 };
const B2 = { storagePerGBMonth: 0.006, egressPerGB: 0.01, putPer1000: 0, getPer1000: 0.0004 };

const within5 = (estimated: number, measured: number) => {
  expect(measured).toBeGreaterThan(0);
  expect(Math.abs(estimated - measured) / measured).toBeLessThanOrEqual(0.05);
};

describe(`a transition of ${VERSIONS} versions after one short day`, () => {
  it('moves every version byte-identical under client reads, collects the old shards, and costs what the estimate said', async () => {
    const meter = new IsolateMeter();
    const memory = Array.from({ length: 8 }, (_, i) => new MemoryBackend({ id: `m${i}`, domain: `zone-${i}` }));
    const backends = memory.map((b) => new MeteredBackend(b, (r) => meter.backendCall(r)));
    const config = parseConfig({
      backends: memory.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
      policies: { hot: { k: 4, m: 2, blockSize: 4096 }, cold: { k: 4, m: 1, blockSize: 4096 } },
      defaultPolicy: 'hot',
      storageClasses: { STANDARD_IA: 'cold' },
    });
    const settings = engineSettings(config);
    const catalog = localCatalog({ garbageGraceMs: GRACE });
    const units = new UnitStore(backends, () => {}, { keyRing: DEV_KEY_RING });
    const store = new EcStore({ catalog, units, settings });
    const byId = new Map<string, Backend>(backends.map((b) => [b.id, b]));
    await store.createBucket('bkt', { region: 'us-east-1' });
    await store.config.putBucketVersioning('bkt', 'Enabled');
    await store.config.putBucketLifecycle('bkt', [
      {
        id: 'cold-after-a-day',
        status: 'Enabled',
        filter: {},
        transitions: [{ days: 1, storageClass: 'STANDARD_IA' }],
        noncurrentVersionTransitions: [{ noncurrentDays: 1, storageClass: 'STANDARD_IA' }],
      },
    ]);

    // The bucket: keys of PER_KEY versions each (the last key fewer), 5 to 40 KB (coded, several rows).
    const random = prng(44);
    const written: { key: string; versionId: string; bytes: Uint8Array }[] = [];
    for (let n = 0; n < VERSIONS; n++) {
      const key = `data/${String(Math.floor(n / PER_KEY)).padStart(4, '0')}`;
      const bytes = randomBytes(random, 5000 + Math.floor(random() * 35_000));
      const r = await store.putObject('bkt', key, body(bytes), put(bytes.length));
      written.push({ key, versionId: r.versionId!, bytes });
    }
    const objectBytes = written.reduce((n, w) => n + w.bytes.length, 0);

    // The bill first: nothing due now, everything one short day on (the clock is the test's).
    const now = Date.now();
    const estimate = await estimateTransitions({
      catalog,
      units,
      settings,
      bucket: 'bkt',
      prices: Object.fromEntries(memory.map((b, i) => [b.id, i < 4 ? R2 : B2])),
      afterDays: [2],
      dayMs: DAY,
      now,
      // Small pages at the small size, so the walk crosses page boundaries there too (keys of 10 versions, pages of 7).
      ...(VERSIONS < 500 ? { pageSize: 7 } : {}),
    });
    expect(estimate).toMatchObject({ versionsWalked: VERSIONS, complete: true, unpriced: [] });
    const [due0, due2] = estimate.horizons;
    expect(due0).toMatchObject({ afterDays: 0, versions: 0, bytes: 0 });
    expect(due2).toMatchObject({ afterDays: 2, versions: VERSIONS, bytes: objectBytes, blocked: 0, reclassed: 0 });
    expect(due2!.rules).toEqual([{ ruleId: 'cold-after-a-day', storageClass: 'STANDARD_IA', versions: VERSIONS, bytes: objectBytes }]);
    expect(due2!.total.cost).toBeGreaterThan(0);
    expect(due2!.storagePerMonthChange).toBeLessThan(0); // 1.5x to 1.25x the data

    // Client reads of random versions all along the transition.
    meter.take();
    let stop = false;
    const reads = { ok: 0, failed: [] as string[] };
    const reader = async (seed: number) => {
      const pick = prng(seed);
      while (!stop) {
        const w = written[Math.floor(pick() * written.length)]!;
        try {
          const got = await readBytes((await store.getObject('bkt', w.key, { versionId: w.versionId, conditions: {} })).body);
          if (Buffer.compare(Buffer.from(got), Buffer.from(w.bytes)) === 0) reads.ok++;
          else reads.failed.push(`${w.key} ${w.versionId}: other bytes`);
        } catch (err) {
          reads.failed.push(`${w.key} ${w.versionId}: ${(err as Error).message}`);
        }
        await new Promise((r) => setImmediate(r));
      }
    };
    const readers = Array.from({ length: READERS }, (_, i) => reader(100 + i));

    const deps = { catalog, units, settings, graceMs: GRACE, writeReservationSeconds: 3600, fleet: [] };
    let transitioned = 0,
      runs = 0;
    const readsBefore = () => reads.ok;
    const readsAtStart = readsBefore();
    for (;;) {
      const transitioner = new Transitioner(deps, { maxVersions: 50, maxRequests: 10_000, deadline: Date.now() + 600_000 });
      const lc: LifecycleStore = {
        deleteObject: store.deleteObject,
        abortMultipartUpload: store.abortMultipartUpload,
        // As the gateway runs it (gateway.ts lifecycleStore): its backend calls counted as the job's.
        transition: (b, k, v, c) => meter.job('transition', () => transitioner.transition(b, k, v, c)),
      };
      const r = await lifecycleBatch(catalog, lc, { dayMs: DAY, now: () => Date.now() + 2 * DAY });
      expect(r).toMatchObject({ failed: 0, transitionsBlocked: 0, errors: [] });
      transitioned += r.transitioned ?? 0;
      runs++;
      if (r.passesCompleted) break;
      expect(runs).toBeLessThan(VERSIONS);
    }
    const duringTransition = reads.ok - readsAtStart;
    const moving = meter.take()!;
    expect(transitioned).toBe(VERSIONS);

    // Every version moved: its class, 4+1 units, every shard file where the unit says.
    for (const w of written) {
      const found = await catalog.getVersion('bkt', w.key, w.versionId);
      if (found.kind !== 'object') throw new Error(`${w.key} ${w.versionId}: ${found.kind}`);
      const m = found.manifest;
      expect(m.metadata.storageClass).toBe('STANDARD_IA');
      if (m.storage.kind !== 'coded') throw new Error('coded expected');
      for (const u of m.storage.units) {
        expect([u.k, u.m, u.missing]).toEqual([4, 1, []]);
        for (let i = 0; i < 5; i++) await memory.find((b) => b.id === u.placement[i])!.head(shardKey('bkt', u.unitId, i));
      }
    }

    // The old shards go after the grace delay: the backends then hold exactly the new ones.
    const collectedAt = new Date(Date.now() + GRACE + 1000);
    while ((await collectGarbage(catalog, byId, collectedAt)) > 0);
    stop = true;
    await Promise.all(readers);
    const collecting = meter.take();
    let blobs = 0;
    for (const b of memory) blobs += (await b.list('')).entries.length;
    expect(blobs).toBe(VERSIONS * 5);

    // Byte-identical after, and no client read failed during.
    expect(reads.failed).toEqual([]);
    expect(duringTransition).toBeGreaterThan(0);
    for (const w of written) {
      const got = await readBytes((await store.getObject('bkt', w.key, { versionId: w.versionId, conditions: {} })).body);
      expect(Buffer.compare(Buffer.from(got), Buffer.from(w.bytes))).toBe(0);
    }

    // The estimate against what was measured.
    const job = trafficByJob(moving).filter((t) => t.job === 'transition');
    const sum = (f: (t: (typeof job)[number]) => number) => job.reduce((n, t) => n + f(t), 0);
    const measured = {
      gets: sum((t) => t.gets + t.heads),
      puts: sum((t) => t.puts + t.lists),
      egress: sum((t) => t.bytesOut),
      ingress: sum((t) => t.bytesIn),
      deletes: deletesIn(collecting),
    };
    console.log(
      `transition proof, ${VERSIONS} versions (${objectBytes} bytes) in ${runs} runs, ${duringTransition} client reads during: estimated ${JSON.stringify({
        gets: due2!.total.gets,
        puts: due2!.total.puts,
        egress: due2!.total.egressBytes,
        ingress: due2!.total.ingressBytes,
        deletes: due2!.total.deletes,
      })}, measured ${JSON.stringify(measured)}`,
    );
    within5(due2!.total.gets, measured.gets);
    within5(due2!.total.puts, measured.puts);
    within5(due2!.total.egressBytes, measured.egress);
    within5(due2!.total.ingressBytes, measured.ingress);
    within5(due2!.total.deletes, measured.deletes);
  }, 600_000);
});

/** DELETE calls in a meter's delta, over every backend. */
function deletesIn(delta: OpsDelta | null): number {
  if (!delta) return 0;
  return Object.values(delta.backends).reduce((n, b) => n + (b.ops.delete?.requests ?? 0), 0);
}
