/**
 * The mover (issue 26) over memory backends and the product's catalog: each rule on its own.
 * - new units are never placed on a draining backend; a draining backend is still read;
 * - a copy is byte for byte the stored file (sealed: ciphertext stays ciphertext), committed by
 *   compare-and-set, the old copy deleted by the collector only after the grace delay;
 * - a move that loses to a concurrent overwrite deletes its copy and changes nothing;
 * - a shard that cannot be read (lost on the draining backend, or its backend retired) is rebuilt
 *   from the others at the target;
 * - the replacement keeps failure domains: never two shards of a unit in one domain while a free
 *   domain remains, never more than m, and no target at all rather than a third.
 */
import { describe, expect, it } from 'vitest';
import { FaultyBackend, MemoryBackend, type Backend } from '../../backends/index.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { replacementBackend } from '../../worker/engine/placement.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import type { CodedUnit } from '../../worker/format/manifest.ts';
import { shardKey } from '../../worker/format/shard-key.ts';
import { collectGarbage } from '../../worker/upkeep/collector.ts';
import { drainBatch, type FleetBackend } from '../../worker/upkeep/drain.ts';
import { drainProgress, rebalanceProgress } from '../../worker/upkeep/drain-progress.ts';
import { estimateRebalance } from '../../worker/upkeep/drain-estimate.ts';
import { placeShards } from '../../worker/engine/placement.ts';
import { moveShard } from '../../worker/upkeep/move.ts';
import { rebuildCatalog } from '../../worker/upkeep/rebuild.ts';
import { DEV_KEY_RING } from '../support/dev-encryption.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { prng, randomBytes } from '../support/random.ts';
import { readBytes } from '../support/read-bytes.ts';

const GRACE = 60_000;
const body = (b: Uint8Array) => new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(b), c.close()) });
const put = (n: number) => ({ contentLength: n, metadata: { user: {} }, checksum: null, conditions: {} });

function setup(states: Record<string, 'draining' | 'retired'> = {}) {
  const backends = Array.from({ length: 7 }, (_, i) => new MemoryBackend({ id: `m${i}`, domain: `zone-${i}` }));
  const config = parseConfig({
    backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain, ...(states[b.id] ? { state: states[b.id] } : {}) })),
    policies: { main: { k: 4, m: 2, blockSize: 4096 } },
    defaultPolicy: 'main',
  });
  const catalog = localCatalog({ garbageGraceMs: GRACE });
  const reachable = backends.filter((b) => states[b.id] !== 'retired');
  const units = new UnitStore(reachable, () => {}, { keyRing: DEV_KEY_RING, placeOn: config.backends.filter((b) => b.state === 'active').map((b) => b.id) });
  const store = new EcStore({ catalog, units, settings: engineSettings(config) });
  const fleet: FleetBackend[] = config.backends.map((b) => ({ id: b.id, domain: b.domain, state: b.state }));
  const byId = new Map<string, Backend>(reachable.map((b) => [b.id, b]));
  return { backends, catalog, store, units, fleet, byId, deps: { catalog, backends: byId, graceMs: GRACE, fleet } };
}

async function unitOf(s: ReturnType<typeof setup>, key: string): Promise<CodedUnit> {
  const m = (await s.catalog.getManifest('b', key))!;
  return (m.storage as { units: CodedUnit[] }).units[0]!;
}

async function read(s: ReturnType<typeof setup>, key: string): Promise<Uint8Array> {
  return readBytes((await s.store.getObject('b', key, { conditions: {} })).body);
}

async function fileOf(b: Backend, key: string): Promise<Uint8Array> {
  return readBytes((await b.get(key)).body);
}

describe('the mover', () => {
  it('places nothing new on a draining backend, moves its shards byte for byte, and deletes the old copies only after the grace delay', async () => {
    // Written while m3 was active, then m3 drains.
    const before = setup();
    await before.store.createBucket('b', { region: 'us-east-1' });
    const rand = prng(7);
    const data = new Map<string, Uint8Array>();
    for (let i = 0; i < 20; i++) {
      const bytes = randomBytes(rand, 5000 + i * 1500);
      data.set(`k${i}`, bytes);
      await before.store.putObject('b', `k${i}`, body(bytes), put(bytes.length));
    }
    const s = setup({ m3: 'draining' }); // for its fleet: the backends and catalog are before's
    const units = new UnitStore(before.backends, () => {}, { keyRing: DEV_KEY_RING, placeOn: before.backends.filter((b) => b.id !== 'm3').map((b) => b.id) });
    const store = new EcStore({
      catalog: before.catalog,
      units,
      settings: engineSettings(
        parseConfig({
          backends: before.backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
          policies: { main: { k: 4, m: 2, blockSize: 4096 } },
          defaultPolicy: 'main',
        }),
      ),
    });
    const byId = new Map<string, Backend>(before.backends.map((b) => [b.id, b]));
    const deps = { catalog: before.catalog, backends: byId, graceMs: GRACE, fleet: s.fleet };
    for (let i = 0; i < 10; i++) await store.putObject('b', `new${i}`, body(new Uint8Array(6000).fill(i)), put(6000));
    for (let i = 0; i < 10; i++) {
      const m = (await before.catalog.getManifest('b', `new${i}`))!;
      expect((m.storage as { units: CodedUnit[] }).units[0]!.placement).not.toContain('m3');
    }
    const units3: { key: string; unit: CodedUnit; shard: number; file: Uint8Array }[] = [];
    for (const key of data.keys()) {
      const unit = ((await before.catalog.getManifest('b', key))!.storage as { units: CodedUnit[] }).units[0]!;
      const shard = unit.placement.indexOf('m3');
      if (shard >= 0) units3.push({ key, unit, shard, file: await fileOf(before.backends[3]!, shardKey('b', unit.unitId, shard)) });
    }
    expect(units3.length).toBeGreaterThan(5);
    const left0 = (await drainProgress(before.catalog, [{ id: 'm3', state: 'draining' }]))[0]!.left.shards;
    expect(left0).toBe(units3.length);

    const report = await drainBatch(deps, { maxMoves: 100, deadline: Date.now() + 60_000 });
    expect(report.copied).toBe(units3.length);
    expect(report.rebuilt + report.gone + report.waiting + report.noTarget).toBe(0);
    const progress = (await drainProgress(before.catalog, [{ id: 'm3', state: 'draining' }]))[0]!;
    expect(progress.left.shards).toBe(0);
    expect(progress.moved.shards).toBe(units3.length);
    for (const u of units3) {
      const now = ((await before.catalog.getManifest('b', u.key))!.storage as { units: CodedUnit[] }).units[0]!;
      const target = now.placement[u.shard]!;
      expect(target).not.toBe('m3');
      // The other shards stayed where they were; the copy is the stored file, byte for byte.
      expect(now.placement.filter((_, i) => i !== u.shard)).toEqual(u.unit.placement.filter((_, i) => i !== u.shard));
      expect(Buffer.from(await fileOf(byId.get(target)!, shardKey('b', u.unit.unitId, u.shard))).equals(Buffer.from(u.file))).toBe(true);
    }
    // Old copies stay through the grace delay (reads in flight), then go.
    await collectGarbage(before.catalog, byId, new Date());
    expect((await before.backends[3]!.list('')).entries.length).toBe(units3.length);
    await collectGarbage(before.catalog, byId, new Date(Date.now() + GRACE + 1000));
    expect((await before.backends[3]!.list('')).entries).toEqual([]);
    // Every object reads back without m3.
    byId.delete('m3');
    const without = new UnitStore(
      before.backends.filter((b) => b.id !== 'm3'),
      () => {},
      { keyRing: DEV_KEY_RING },
    );
    const readStore = new EcStore({
      catalog: before.catalog,
      units: without,
      settings: engineSettings(
        parseConfig({
          backends: before.backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
          policies: { main: { k: 4, m: 2, blockSize: 4096 } },
          defaultPolicy: 'main',
        }),
      ),
    });
    for (const [key, bytes] of data) {
      const got = await readBytes((await readStore.getObject('b', key, { conditions: {} })).body);
      expect(Buffer.from(got).equals(Buffer.from(bytes)), key).toBe(true);
    }
    // A second run finds nothing more.
    const again = await drainBatch(deps, { maxMoves: 100, deadline: Date.now() + 60_000 });
    expect(again.copied + again.rebuilt).toBe(0);
    // The catalog lost: rebuilt from the backends alone, each moved shard is found where it is now
    // (its header still names where it was written).
    const fresh = localCatalog({ garbageGraceMs: GRACE });
    await fresh.insertBucket('b', 'us-east-1');
    const rebuilt = await rebuildCatalog(
      'b',
      before.backends.filter((b) => b.id !== 'm3'),
      fresh,
      DEV_KEY_RING,
    );
    expect(rebuilt.restored.length).toBe(30);
    for (const u of units3) {
      const now = ((await fresh.getManifest('b', u.key))!.storage as { units: CodedUnit[] }).units[0]!;
      expect(now.placement).not.toContain('m3');
      expect(now.missing).toEqual([]);
    }
  });

  it('a move that loses to a concurrent overwrite changes nothing and deletes its copy', async () => {
    const s = setup({ m3: 'draining' });
    await s.store.createBucket('b', { region: 'us-east-1' });
    // Written before m3 drained: place on all seven (a store without placeOn).
    const all = new EcStore({
      catalog: s.catalog,
      units: new UnitStore(s.backends, () => {}, { keyRing: DEV_KEY_RING }),
      settings: engineSettings(
        parseConfig({
          backends: s.backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
          policies: { main: { k: 4, m: 2, blockSize: 4096 } },
          defaultPolicy: 'main',
        }),
      ),
    });
    let key = '';
    for (let i = 0; !key; i++) {
      await all.putObject('b', `x${i}`, body(new Uint8Array(9000).fill(1)), put(9000));
      if ((await unitOf(s, `x${i}`)).placement.includes('m3')) key = `x${i}`;
    }
    const unit = await unitOf(s, key);
    const record = (await s.catalog.getUnit('b', unit.unitId, key))!;
    const shard = unit.placement.indexOf('m3');
    const target = replacementBackend(
      `b/${key}`,
      unit.placement,
      shard,
      s.backends.filter((b) => b.id !== 'm3'),
      (id) => `zone-${id.slice(1)}`,
      2,
    )!;
    // The client overwrites the key after the mover read the unit, before it commits.
    const racing = {
      ...s.deps,
      catalog: {
        ...s.catalog,
        commitMove: async (...a: Parameters<typeof s.catalog.commitMove>) => {
          await s.store.putObject('b', key, body(new Uint8Array(9000).fill(2)), put(9000));
          return s.catalog.commitMove(...a);
        },
      } as typeof s.catalog,
    };
    const outcome = await moveShard('b', record, shard, target, racing);
    expect(outcome.kind).toBe('gone');
    await expect(target.head(shardKey('b', unit.unitId, shard))).rejects.toThrow(/NotFound/);
    expect(Buffer.from(await read(s, key)).equals(Buffer.from(new Uint8Array(9000).fill(2)))).toBe(true);
  });

  it('rebuilds a shard lost on the draining backend, and every shard of a retired one, from the others', async () => {
    for (const state of ['draining', 'retired'] as const) {
      const s = setup({ m3: state });
      await s.store.createBucket('b', { region: 'us-east-1' });
      const all = new EcStore({
        catalog: s.catalog,
        units: new UnitStore(s.backends, () => {}, { keyRing: DEV_KEY_RING }),
        settings: engineSettings(
          parseConfig({
            backends: s.backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
            policies: { main: { k: 4, m: 2, blockSize: 4096 } },
            defaultPolicy: 'main',
          }),
        ),
      });
      const data = new Map<string, Uint8Array>();
      for (let i = 0; i < 12; i++) {
        const bytes = randomBytes(prng(i), 7000 + i);
        data.set(`y${i}`, bytes);
        await all.putObject('b', `y${i}`, body(bytes), put(bytes.length));
      }
      // One shard on m3 is lost outright.
      let lost = false;
      for (const key of data.keys()) {
        const u = await unitOf(s, key);
        if (!lost && u.placement.includes('m3')) {
          await s.backends[3]!.delete(shardKey('b', u.unitId, u.placement.indexOf('m3')));
          lost = true;
        }
      }
      const report = await drainBatch(s.deps, { maxMoves: 100, deadline: Date.now() + 60_000 });
      if (state === 'draining') expect(report.rebuilt, state).toBe(1);
      else expect(report.copied, state).toBe(0);
      expect(report.rebuilt + report.copied).toBeGreaterThan(3);
      for (const [key, bytes] of data) {
        expect((await unitOf(s, key)).placement).not.toContain('m3');
        expect(Buffer.from(await read(s, key)).equals(Buffer.from(bytes)), `${state} ${key}`).toBe(true);
      }
    }
  });

  it('a move whose target is offline waits (nothing committed, nothing left there) and completes once it is back', async () => {
    const s = setup({ m3: 'draining' });
    await s.store.createBucket('b', { region: 'us-east-1' });
    const all = new EcStore({
      catalog: s.catalog,
      units: new UnitStore(s.backends, () => {}, { keyRing: DEV_KEY_RING }),
      settings: engineSettings(
        parseConfig({
          backends: s.backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
          policies: { main: { k: 4, m: 2, blockSize: 4096 } },
          defaultPolicy: 'main',
        }),
      ),
    });
    let key = '';
    for (let i = 0; !key; i++) {
      await all.putObject('b', `z${i}`, body(new Uint8Array(20000).fill(3)), put(20000));
      if ((await unitOf(s, `z${i}`)).placement.includes('m3')) key = `z${i}`;
    }
    const unit = await unitOf(s, key);
    const shard = unit.placement.indexOf('m3');
    const target = replacementBackend(
      `b/${key}`,
      unit.placement,
      shard,
      s.backends.filter((b) => b.id !== 'm3'),
      (id) => `zone-${id.slice(1)}`,
      2,
    )!;
    const offline = new FaultyBackend(target);
    offline.goOffline();
    const deps = { ...s.deps, backends: new Map([...s.byId, [target.id, offline as Backend]]) };
    const first = await drainBatch(deps, { maxMoves: 100, deadline: Date.now() + 60_000, bucket: 'b' });
    expect(first.waiting).toBeGreaterThanOrEqual(1);
    expect(first.waits.find((w) => w.unitId === unit.unitId)).toMatchObject({ from: 'm3', to: target.id });
    expect((await unitOf(s, key)).placement[shard]).toBe('m3');
    await expect(target.head(shardKey('b', unit.unitId, shard))).rejects.toThrow(/NotFound/);
    offline.goOnline();
    const second = await drainBatch(deps, { maxMoves: 100, deadline: Date.now() + 60_000, bucket: 'b' });
    expect(second.copied).toBeGreaterThanOrEqual(1);
    expect((await unitOf(s, key)).placement[shard]).toBe(target.id);
    expect(Buffer.from(await read(s, key)).equals(Buffer.from(new Uint8Array(20000).fill(3)))).toBe(true);
  });

  it('keeps failure domains: a free domain first, never more than m in one, else no target', () => {
    const b = (id: string, domain: string) => ({ id, domain });
    const dom = (id: string) => (({ a: 'd1', b: 'd2', c: 'd3', d: 'd4', e: 'd5', f: 'd6', g: 'd1', h: 'd2' }) as Record<string, string>)[id];
    // Shard 5 on f (leaving): g shares d1 with a, h shares d2 with b, x is a new domain.
    const placement = ['a', 'b', 'c', 'd', 'e', 'f'];
    expect(replacementBackend('n', placement, 5, [b('g', 'd1'), b('h', 'd2'), b('x', 'd9')], (id) => dom(id) ?? 'd9', 2)!.id).toBe('x');
    // No free domain: one already holding a shard, never past m.
    expect(['g', 'h']).toContain(replacementBackend('n', placement, 5, [b('g', 'd1'), b('h', 'd2')], dom, 2)!.id);
    expect(replacementBackend('n', placement, 5, [b('g', 'd1'), b('h', 'd2')], dom, 1)).toBeNull();
    // Never a backend that already holds a shard of the unit.
    expect(replacementBackend('n', placement, 5, [b('a', 'd1')], dom, 2)).toBeNull();
  });
});

describe('rebalancing onto a new backend ("rebalance": true)', () => {
  it('moves onto it exactly the shards placement now assigns to it, one per unit, and nothing else; then finds it full and stops walking', async () => {
    // Written over six backends; then a seventh joins with rebalance on.
    const all = Array.from({ length: 7 }, (_, i) => new MemoryBackend({ id: `m${i}`, domain: `zone-${i}` }));
    const six = all.slice(0, 6);
    const policies = { main: { k: 4, m: 2, blockSize: 4096 } };
    const catalog = localCatalog({ garbageGraceMs: GRACE });
    const settings = engineSettings(
      parseConfig({ backends: all.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })), policies, defaultPolicy: 'main' }),
    );
    const store = new EcStore({ catalog, units: new UnitStore(six, () => {}, { keyRing: DEV_KEY_RING }), settings });
    await store.createBucket('b', { region: 'us-east-1' });
    const rand = prng(11);
    const data = new Map<string, Uint8Array>();
    for (let i = 0; i < 40; i++) {
      const bytes = randomBytes(rand, 20_000 + i * 700);
      data.set(`k${i}`, bytes);
      await store.putObject('b', `k${i}`, body(bytes), put(bytes.length));
    }
    const before = new Map<string, string[]>();
    for (const key of data.keys()) before.set(key, [...(await unitOf({ catalog } as ReturnType<typeof setup>, key)).placement]);
    // What placement over the seven now picks, per object; m6 is in it for some, not all.
    const ideal = new Map([...data.keys()].map((key) => [key, placeShards(`b/${key}`, all, 4, 2).map((b) => b.id)]));
    const gaining = [...ideal].filter(([, ids]) => ids.includes('m6')).map(([key]) => key);
    expect(gaining.length).toBeGreaterThan(3);
    expect(gaining.length).toBeLessThan(data.size);

    const config = parseConfig({
      backends: all.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain, ...(b.id === 'm6' ? { rebalance: true } : {}) })),
      policies,
      defaultPolicy: 'main',
    });
    const fleet: FleetBackend[] = config.backends.map((b) => ({ id: b.id, domain: b.domain, state: b.state, ...(b.rebalance ? { rebalance: true } : {}) }));
    const byId = new Map<string, Backend>(all.map((b) => [b.id, b]));
    const deps = { catalog, backends: byId, graceMs: GRACE, fleet };
    // The bill first: the estimate walks the same picks (rebalance-pick.ts) before anything moves.
    const estimate = await estimateRebalance(catalog, 'm6', fleet, {});
    expect({ shards: estimate.shards, rebuilt: estimate.rebuilt, noTarget: estimate.noTarget, complete: estimate.complete }).toEqual({
      shards: gaining.length,
      rebuilt: 0,
      noTarget: 0,
      complete: true,
    });
    expect({ puts: estimate.total.puts, deletes: estimate.total.deletes }).toEqual({ puts: gaining.length, deletes: gaining.length });
    expect(estimate.byBackend.m6!.usage.putRequests).toBe(gaining.length);
    // Two runs of 10 moves, then the rest: resumable like a drain.
    const first = await drainBatch(deps, { maxMoves: 10, deadline: Date.now() + 60_000 });
    expect(first.rebalanced).toBe(10);
    expect(first.stopped).toBe(true);
    const rest = await drainBatch(deps, { maxMoves: 1000, deadline: Date.now() + 60_000 });
    expect(first.rebalanced + rest.rebalanced).toBe(gaining.length);
    expect(rest.waiting + rest.noTarget + rest.gone).toBe(0);

    for (const [key, was] of before) {
      const now = (await unitOf({ catalog } as ReturnType<typeof setup>, key)).placement;
      // The unit's shards are where placement over the seven puts them (as a set)...
      expect([...now].sort(), key).toEqual([...ideal.get(key)!].sort());
      // ...and only the one that went to m6 changed place.
      const changed = now.map((id, i) => (id === was[i] ? null : i)).filter((i) => i !== null);
      expect(changed.length, key).toBe(gaining.includes(key) ? 1 : 0);
      if (changed.length) expect(now[changed[0]!]).toBe('m6');
    }
    // Everything reads back; the displaced copies go after the grace delay.
    const reader = new EcStore({ catalog, units: new UnitStore(all, () => {}, { keyRing: DEV_KEY_RING }), settings });
    for (const [key, bytes] of data) {
      const got = await readBytes((await reader.getObject('b', key, { conditions: {} })).body);
      expect(Buffer.from(got).equals(Buffer.from(bytes)), key).toBe(true);
    }
    const filesBefore = (await Promise.all(six.map((b) => b.list('')))).reduce((n, p) => n + p.entries.length, 0);
    await collectGarbage(catalog, byId, new Date(Date.now() + GRACE + 1000));
    const filesAfter = (await Promise.all(six.map((b) => b.list('')))).reduce((n, p) => n + p.entries.length, 0);
    expect(filesBefore - filesAfter).toBe(gaining.length);
    expect((await all[6]!.list('')).entries.length).toBe(gaining.length);
    // ...and hold exactly the bytes the estimate said would move.
    expect((await all[6]!.list('')).entries.reduce((n, e) => n + e.size, 0)).toBe(estimate.bytes);

    // The pass that moved was not a "full" one; the next pass finds nothing and marks m6 filled;
    // after that the mover does not walk the bucket at all.
    let progress = (await rebalanceProgress(catalog, [{ id: 'm6' }]))[0]!;
    expect(progress).toMatchObject({ moved: { shards: gaining.length }, done: false });
    const full = await drainBatch(deps, { maxMoves: 1000, deadline: Date.now() + 60_000 });
    expect({ moved: full.rebalanced, passes: full.passesCompleted }).toEqual({ moved: 0, passes: 1 });
    progress = (await rebalanceProgress(catalog, [{ id: 'm6' }]))[0]!;
    expect(progress).toMatchObject({ bucketsFilled: 1, buckets: 1, done: true });
    const idle = await drainBatch(deps, { maxMoves: 1000, deadline: Date.now() + 60_000 });
    expect({ moved: idle.rebalanced, passes: idle.passesCompleted }).toEqual({ moved: 0, passes: 0 });
  });

  it('is refused on a backend that is not active', () => {
    const backends = Array.from({ length: 7 }, (_, i) => ({
      id: `m${i}`,
      kind: 'memory',
      domain: `zone-${i}`,
      ...(i === 6 ? { state: 'draining', rebalance: true } : {}),
    }));
    expect(() => parseConfig({ backends, policies: { main: { k: 4, m: 2 } }, defaultPolicy: 'main' })).toThrow(
      /backend "m6" is draining and has "rebalance": true/,
    );
  });
});

describe('backend states in the config', () => {
  const backends = (states: Record<number, string> = {}) =>
    Array.from({ length: 7 }, (_, i) => ({ id: `m${i}`, kind: 'memory', domain: `zone-${i}`, ...(states[i] ? { state: states[i] } : {}) }));
  const config = (states: Record<number, string> = {}) => ({ backends: backends(states), policies: { main: { k: 4, m: 2 } }, defaultPolicy: 'main' });

  it('defaults to active, takes draining and retired, refuses anything else naming the field', () => {
    expect(parseConfig(config()).backends.every((b) => b.state === 'active')).toBe(true);
    expect(parseConfig(config({ 1: 'draining' })).backends.map((b) => b.state)).toEqual([
      'active',
      'draining',
      'active',
      'active',
      'active',
      'active',
      'active',
    ]);
    expect(parseConfig(config({ 2: 'retired' })).backends[2]!.state).toBe('retired');
    expect(() => parseConfig(config({ 1: 'leaving' }))).toThrow(/backends\.1\.state/);
  });

  it('refuses a policy that the active backends alone cannot place, saying why', () => {
    expect(() => parseConfig(config({ 0: 'draining', 1: 'retired' }))).toThrow(
      /needs 6 backends.*only 5 are active \(2 draining or retired take no new shards\)/,
    );
  });
});
