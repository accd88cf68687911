/**
 * "Move it to the cheap clouds after 30 days" as one rule (issue 44): a policy's pool of backends
 * (config `backends`). The bucket's policy writes 4+2 on six backends ("premium", m0-m5); the
 * STANDARD_IA class names a 4+2 policy on the six others ("cheap", m6-m11): the same code, other
 * providers. The estimate says the move reads from the premium pool and writes to the cheap one
 * only; the transition rewrites every version onto the cheap pool (a version that has the cheap
 * code but sits on premium backends does not conform), byte-identical, and once collected the
 * premium backends hold none of it. A drain keeps a pooled unit in its pool (its estimate too),
 * waiting when the pool has no spare; a pool changed is re-striped (what lies outside it counts as
 * left). The config refuses a pool naming an unknown backend, one
 * twice, or one too small for the code.
 */
import { describe, expect, it } from 'vitest';
import { MemoryBackend, type Backend } from '../../backends/index.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { collectGarbage } from '../../worker/upkeep/collector.ts';
import { restripeBatch } from '../../worker/upkeep/restripe.ts';
import { restripeProgress } from '../../worker/upkeep/restripe-progress.ts';
import { drainBatch, type FleetBackend } from '../../worker/upkeep/drain.ts';
import { estimateDrain } from '../../worker/upkeep/drain-estimate.ts';
import { lifecycleBatch } from '../../worker/upkeep/lifecycle.ts';
import { estimateTransitions } from '../../worker/upkeep/transition-estimate.ts';
import { Transitioner } from '../../worker/upkeep/transition.ts';
import { DEV_KEY_RING } from '../support/dev-encryption.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { prng, randomBytes } from '../support/random.ts';
import { readBytes } from '../support/read-bytes.ts';

const DAY = 60_000;
const PREMIUM = ['m0', 'm1', 'm2', 'm3', 'm4', 'm5'];
const CHEAP = ['m6', 'm7', 'm8', 'm9', 'm10', 'm11'];
const body = (b: Uint8Array) => new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(b), c.close()) });
const configOf = (backends: { id: string; domain: string }[], policies: Record<string, unknown>) =>
  parseConfig({
    backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
    policies,
    defaultPolicy: 'premium',
    storageClasses: { STANDARD_IA: 'cheap' },
  });

describe('a storage class on a pool of cheaper backends', () => {
  it('moves every version from the premium pool to the cheap one, as the estimate said', async () => {
    const memory = Array.from({ length: 12 }, (_, i) => new MemoryBackend({ id: `m${i}`, domain: `zone-${i}` }));
    const config = configOf(memory, {
      premium: { k: 4, m: 2, blockSize: 4096, backends: PREMIUM },
      cheap: { k: 4, m: 2, blockSize: 4096, backends: CHEAP },
    });
    const settings = engineSettings(config);
    const catalog = localCatalog({ garbageGraceMs: 60_000 });
    const units = new UnitStore(memory, () => {}, { keyRing: DEV_KEY_RING });
    const store = new EcStore({ catalog, units, settings });
    await store.createBucket('bkt', { region: 'us-east-1' });
    await store.config.putBucketLifecycle('bkt', [
      { id: 'cheap-after-30', status: 'Enabled', filter: {}, transitions: [{ days: 30, storageClass: 'STANDARD_IA' }] },
    ]);
    const data = new Map<string, Uint8Array>();
    for (let i = 0; i < 8; i++) {
      const bytes = randomBytes(prng(80 + i), 9000 + i * 3000);
      data.set(`k${i}`, bytes);
      await store.putObject('bkt', `k${i}`, body(bytes), { contentLength: bytes.length, metadata: { user: {} }, checksum: null, conditions: {} });
    }
    const holds = async (ids: string[]) => {
      let n = 0;
      for (const id of ids) n += (await memory.find((b) => b.id === id)!.list('')).entries.length;
      return n;
    };
    expect([await holds(PREMIUM), await holds(CHEAP)]).toEqual([8 * 6, 0]);

    const prices = Object.fromEntries(
      memory.map((b) => [
        b.id,
        PREMIUM.includes(b.id)
          ? { storagePerGBMonth: 0.023, egressPerGB: 0.09, putPer1000: 0.005, getPer1000: 0.0004 }
          : { storagePerGBMonth: 0.006, egressPerGB: 0.01, putPer1000: 0, getPer1000: 0.0004 },
      ]),
    );
    const estimate = await estimateTransitions({ catalog, units, settings, bucket: 'bkt', prices, afterDays: [31], dayMs: DAY, now: Date.now() });
    const [, due] = estimate.horizons;
    expect(due).toMatchObject({ versions: 8, reclassed: 0, blocked: 0, total: { gets: 8 * 4, puts: 8 * 6, deletes: 8 * 6 } });
    for (const [id, line] of Object.entries(due!.byBackend)) {
      if (PREMIUM.includes(id)) expect([line.usage.putRequests, line.storedDelta < 0], id).toEqual([0, true]);
      else expect([line.usage.getRequests, line.usage.deleteRequests, line.storedDelta > 0], id).toEqual([0, 0, true]);
    }
    expect(due!.storagePerMonthChange).toBeLessThan(0);

    const deps = { catalog, units, settings, graceMs: 60_000, writeReservationSeconds: 3600, fleet: [] };
    const transition = new Transitioner(deps, { maxVersions: 100, maxRequests: 10_000, deadline: Date.now() + 60_000 }).transition;
    const report = await lifecycleBatch(
      catalog,
      { deleteObject: store.deleteObject, abortMultipartUpload: store.abortMultipartUpload, transition },
      { dayMs: DAY, now: () => Date.now() + 31 * DAY },
    );
    expect(report).toMatchObject({ transitioned: 8, failed: 0, transitionsBlocked: 0 });
    for (const [key, bytes] of data) {
      const m = await catalog.getManifest('bkt', key);
      expect(m!.metadata.storageClass).toBe('STANDARD_IA');
      if (m!.storage.kind !== 'coded') throw new Error('coded expected');
      for (const u of m!.storage.units)
        expect(
          u.placement.every((id) => CHEAP.includes(id)),
          key,
        ).toBe(true);
      expect(await readBytes((await store.getObject('bkt', key, { conditions: {} })).body), key).toEqual(bytes);
    }
    await collectGarbage(catalog, new Map<string, Backend>(memory.map((b) => [b.id, b])), new Date(Date.now() + 120_000));
    expect([await holds(PREMIUM), await holds(CHEAP)]).toEqual([0, 8 * 6]);
  });

  it('refuses a pool naming an unknown backend, one twice, or too few for the code', () => {
    const six = Array.from({ length: 6 }, (_, i) => ({ id: `m${i}`, domain: `zone-${i}` }));
    const ok = { k: 2, m: 1, blockSize: 4096 };
    expect(() => configOf(six, { premium: ok, cheap: { ...ok, backends: ['m0', 'm9', 'm1'] } })).toThrow(
      /policy "cheap": backends names "m9", which is not under "backends"/,
    );
    expect(() => configOf(six, { premium: ok, cheap: { ...ok, backends: ['m0', 'm1', 'm1'] } })).toThrow(/backends names "m1" twice/);
    expect(() => configOf(six, { premium: ok, cheap: { ...ok, backends: ['m0', 'm1'] } })).toThrow(
      /needs 3 backends \(one per shard\), only 2 configured in its pool/,
    );
  });

  it('a drain keeps a pooled unit in its pool: the estimate and the mover pick targets inside it, or none', async () => {
    // Nine backends; the bucket's 4+2 policy has a pool of seven (m0-m6): a drained pool backend's
    // shards go to the pool's spare, never to m7 or m8; once the pool has no spare, they wait.
    const memory = Array.from({ length: 9 }, (_, i) => new MemoryBackend({ id: `m${i}`, domain: `zone-${i}` }));
    const POOL = ['m0', 'm1', 'm2', 'm3', 'm4', 'm5', 'm6'];
    const config = parseConfig({
      backends: memory.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
      policies: { premium: { k: 4, m: 2, blockSize: 4096, backends: POOL } },
      defaultPolicy: 'premium',
    });
    const settings = engineSettings(config);
    const catalog = localCatalog({ garbageGraceMs: 0 });
    const store = new EcStore({ catalog, units: new UnitStore(memory), settings });
    await store.createBucket('bkt', { region: 'us-east-1' });
    for (let i = 0; i < 12; i++)
      await store.putObject('bkt', `k${i}`, body(randomBytes(prng(90 + i), 9000)), {
        contentLength: 9000,
        metadata: { user: {} },
        checksum: null,
        conditions: {},
      });
    const pools = Object.values(config.policies).flatMap((p) => (p.backends ? [p.backends] : []));
    const fleetWith = (draining: string[]): FleetBackend[] =>
      memory.map((b) => ({ id: b.id, domain: b.domain, state: draining.includes(b.id) ? ('draining' as const) : ('active' as const) }));
    const byId = new Map<string, Backend>(memory.map((b) => [b.id, b]));
    const placements = async () => (await catalog.listUnits('bkt', null, 100)).map((r) => r.unit.placement);
    const onM0 = (await placements()).filter((p) => p.includes('m0')).length;
    expect(onM0).toBeGreaterThan(0);

    const estimate = await estimateDrain(catalog, 'm0', fleetWith(['m0']), {}, undefined, pools);
    expect(estimate).toMatchObject({ shards: onM0, noTarget: 0 });
    expect(Object.keys(estimate.byBackend).some((id) => id === 'm7' || id === 'm8')).toBe(false);
    const moved = await drainBatch({ catalog, backends: byId, graceMs: 0, fleet: fleetWith(['m0']), pools }, { maxMoves: 100, deadline: Date.now() + 60_000 });
    expect(moved).toMatchObject({ copied: onM0, noTarget: 0 });
    for (const p of await placements())
      expect(
        p.every((id) => POOL.includes(id) && id !== 'm0'),
        p.join(),
      ).toBe(true);

    // m1 drained too: the pool's five others hold every unit already; no target inside, none taken outside.
    const onM1 = (await placements()).filter((p) => p.includes('m1')).length;
    expect(await estimateDrain(catalog, 'm1', fleetWith(['m0', 'm1']), {}, undefined, pools)).toMatchObject({ shards: 0, noTarget: onM1 });
    const waited = await drainBatch(
      { catalog, backends: byId, graceMs: 0, fleet: fleetWith(['m0', 'm1']), pools },
      { maxMoves: 100, deadline: Date.now() + 60_000 },
    );
    expect(waited).toMatchObject({ copied: 0, noTarget: onM1 });
    for (const p of await placements()) expect(p.some((id) => id === 'm7' || id === 'm8')).toBe(false);
    // Without pools (as before them), the same drain would have left the pool.
    expect((await estimateDrain(catalog, 'm1', fleetWith(['m0', 'm1']), {})).shards).toBe(onM1);
  });

  it("a policy's pool changed: the re-stripe counts what is outside it as left and moves it in", async () => {
    const memory = Array.from({ length: 12 }, (_, i) => new MemoryBackend({ id: `m${i}`, domain: `zone-${i}` }));
    const settingsOn = (pool: string[]) =>
      engineSettings(configOf(memory, { premium: { k: 4, m: 2, blockSize: 4096, backends: pool }, cheap: { k: 4, m: 2, blockSize: 4096, backends: CHEAP } }));
    const catalog = localCatalog({ garbageGraceMs: 0 });
    const units = new UnitStore(memory, () => {}, { keyRing: DEV_KEY_RING });
    const before = new EcStore({ catalog, units, settings: settingsOn(PREMIUM) });
    await before.createBucket('bkt', { region: 'us-east-1' });
    const data = new Map<string, Uint8Array>();
    for (let i = 0; i < 6; i++) {
      const bytes = randomBytes(prng(120 + i), 10_000 + i * 1000);
      data.set(`k${i}`, bytes);
      await before.putObject('bkt', `k${i}`, body(bytes), { contentLength: bytes.length, metadata: { user: {} }, checksum: null, conditions: {} });
    }
    const settings = settingsOn(['m0', 'm1', 'm2', 'm6', 'm7', 'm8']); // half the premium pool swapped for other backends
    const deps = { catalog, units, settings, graceMs: 0, writeReservationSeconds: 3600, fleet: [] };
    const [progress] = await restripeProgress(catalog, settings);
    expect(progress).toMatchObject({ bucket: 'bkt', left: { units: 6 }, done: false });
    expect(progress!.target).toMatch(/ on m0,m1,m2,m6,m7,m8/);
    expect(await restripeBatch(deps, { maxVersions: 100, deadline: Date.now() + 60_000 })).toMatchObject({ rewritten: 6, failed: 0 });
    expect((await restripeProgress(catalog, settings))[0]).toMatchObject({ left: { units: 0 }, done: true });
    const store = new EcStore({ catalog, units, settings });
    for (const [key, bytes] of data) {
      const m = await catalog.getManifest('bkt', key);
      if (m!.storage.kind !== 'coded') throw new Error('coded expected');
      for (const u of m!.storage.units)
        expect(
          u.placement.every((id) => ['m0', 'm1', 'm2', 'm6', 'm7', 'm8'].includes(id)),
          key,
        ).toBe(true);
      expect(await readBytes((await store.getObject('bkt', key, { conditions: {} })).body), key).toEqual(bytes);
    }
  });
});
