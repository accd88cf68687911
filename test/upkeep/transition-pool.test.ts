/**
 * "Move it to the cheap clouds after 30 days" as one rule (issue 44): a policy's pool of backends
 * (config `backends`). The bucket's policy writes 4+2 on six backends ("premium", m0-m5); the
 * STANDARD_IA class names a 4+2 policy on the six others ("cheap", m6-m11): the same code, other
 * providers. The estimate says the move reads from the premium pool and writes to the cheap one
 * only; the transition rewrites every version onto the cheap pool (a version that has the cheap
 * code but sits on premium backends does not conform), byte-identical, and once collected the
 * premium backends hold none of it. The config refuses a pool naming an unknown backend, one
 * twice, or one too small for the code.
 */
import { describe, expect, it } from 'vitest';
import { MemoryBackend, type Backend } from '../../backends/index.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { collectGarbage } from '../../worker/upkeep/collector.ts';
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
    await store.putBucketLifecycle('bkt', [{ id: 'cheap-after-30', status: 'Enabled', filter: {}, transitions: [{ days: 30, storageClass: 'STANDARD_IA' }] }]);
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
});
