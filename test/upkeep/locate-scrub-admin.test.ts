/**
 * `locate` and the targeted `scrub?bucket=&prefix=` of the admin API (issue 37), signed as the
 * `shardgate` commands sign them, over memory backends and the product's catalog: locate names
 * every shard's backend and key and what the backend holds now (present, missing, wrong size,
 * unreachable; recorded missing), and `shardgate locate` prints it; a scrub of one prefix checks
 * the units under it only, names the damaged objects, queues their repairs, and pages with `next`.
 */
import { AwsClient } from 'aws4fetch';
import { describe, expect, it } from 'vitest';
import { FaultyBackend } from '../../backends/faulty.ts';
import { MemoryBackend } from '../../backends/memory.ts';
import { command as locate, locationText, type Location } from '../../cli/commands/locate.ts';
import { command as scrub } from '../../cli/commands/scrub.ts';
import { createAdmin } from '../../worker/app/admin.ts';
import { createApp } from '../../worker/app/app.ts';
import { makeAuthenticate } from '../../worker/app/auth-gate.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore, type RepairTask } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { shardKey } from '../../worker/format/shard-key.ts';
import { scrubSelection, type SelectionScrubReport } from '../../worker/upkeep/scrub-selection.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { testS3Settings } from '../support/memory-store.ts';

const KEY = { accessKeyId: 'ops', secretAccessKey: 'ops-secret-for-tests' };

async function setup() {
  const faulty = Array.from({ length: 6 }, (_, i) => new FaultyBackend(new MemoryBackend({ id: `m${i}`, domain: `d${i}` })));
  const config = parseConfig({
    backends: faulty.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
    policies: { ec: { k: 4, m: 2, blockSize: 4096, small: { threshold: 100 } } },
    defaultPolicy: 'ec',
    credentials: [KEY],
  });
  const catalog = localCatalog();
  const store = new EcStore({ catalog, units: new UnitStore(faulty), settings: engineSettings(config) });
  await store.createBucket('photos', { region: 'us-east-1' });
  const put = (key: string, size: number) =>
    store.putObject('photos', key, new Blob([new Uint8Array(size).fill(7)]).stream(), {
      contentLength: size,
      metadata: { user: {} },
      checksum: null,
      conditions: {},
    });
  for (const key of ['2024/a', '2024/b', '2024/c', '2025/a', '2025/b']) await put(key, 9000);
  await put('tiny', 10); // inline
  const queued: RepairTask[] = [];
  const authenticate = makeAuthenticate(config, {});
  const admin = createAdmin({
    authenticate,
    catalog,
    backends: faulty,
    region: 'us-east-1',
    scrub: { mode: 'heads', unitsPerRun: 10 },
    enqueueRepair: (t) => void queued.push(t),
    repair: async () => {},
  });
  const app = createApp({ store, config: store.config, authenticate, settings: testS3Settings(), admin });
  const client = new AwsClient({ ...KEY, service: 's3', region: 'us-east-1', retries: 0 });
  const post = async (path: string) => {
    const res = await app.fetch(await client.sign(`http://gw.test/_shardgate/admin/${path}`, { method: 'POST' }));
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const unitOf = async (key: string) => {
    const m = await catalog.getManifest('photos', key);
    if (m?.storage.kind !== 'coded') throw new Error('not coded');
    return m.storage.units[0]!;
  };
  return { faulty, catalog, post, unitOf, queued };
}

describe('admin locate', () => {
  it('every shard with its backend, key and state; recorded missing; inline; unknown key', async () => {
    const { faulty, catalog, post, unitOf } = await setup();
    const u = await unitOf('2024/a');
    const on = (i: number) => faulty.find((b) => b.id === u.placement[i])!;
    await on(1).inner.delete(shardKey('photos', u.unitId, 1)); // lost
    await on(2).inner.put(shardKey('photos', u.unitId, 2), new Uint8Array(10), 10); // truncated
    on(3).goOffline();
    await catalog.markMissing('photos', u.unitId, [1], '2024/a');

    const { status, body } = await post('locate?bucket=photos&key=2024%2Fa');
    expect(status).toBe(200);
    const l = body as unknown as Location;
    expect(l).toMatchObject({ bucket: 'photos', key: '2024/a', storage: 'coded', size: 9000, truncated: false });
    const shards = l.units[0]!.shards;
    expect(shards.map((s) => s.backend)).toEqual(u.placement);
    expect(shards.map((s) => s.shardKey)).toEqual(u.placement.map((_, i) => shardKey('photos', u.unitId, i)));
    expect(shards.map((s) => s.state)).toEqual(['present', 'missing', 'wrong-size', 'unreachable', 'present', 'present']);
    expect(shards[2]).toMatchObject({ size: 10 });
    expect(shards[0]!.size).toBe(shards[0]!.expectedSize);
    expect(shards.map((s) => s.recordedMissing)).toEqual([false, true, false, false, false, false]);
    expect(l.units[0]!.readable).toBe(false); // 3 present of k=4

    const text = locationText(l);
    expect(text).toMatch(/3 of 6 shards present \(FEWER THAN k=4: unreadable now\)/);
    expect(text).toMatch(new RegExp(`^${u.unitId}\\s+1 \\(data\\)\\s+${u.placement[1]}\\s+missing \\(recorded missing\\)`, 'm'));

    expect((await post('locate?bucket=photos&key=tiny')).body).toMatchObject({ storage: 'inline', units: [] });
    expect(locationText((await post('locate?bucket=photos&key=tiny')).body as unknown as Location)).toMatch(/stored inline in the catalog/);
    expect(await post('locate?bucket=photos&key=nope')).toMatchObject({ status: 404, body: { code: 'NoSuchKey' } });
    expect(await post('locate?bucket=photos')).toMatchObject({ status: 400, body: { code: 'InvalidArgument' } });
  });
});

describe('admin scrub of a bucket and prefix', () => {
  it('checks only the units under the prefix, names the damaged ones and queues their repair', async () => {
    const { faulty, post, unitOf, queued } = await setup();
    for (const key of ['2024/b', '2025/a']) {
      const u = await unitOf(key);
      await faulty.find((b) => b.id === u.placement[0])!.inner.delete(shardKey('photos', u.unitId, 0));
    }
    const { status, body } = await post('scrub?bucket=photos&prefix=2024%2F');
    expect(status).toBe(200);
    const r = body as unknown as SelectionScrubReport;
    expect(r).toMatchObject({ units: 3, shards: 18, damaged: 1, next: null });
    expect(r.damage).toEqual([{ key: '2024/b', unitId: (await unitOf('2024/b')).unitId, shards: [0] }]);
    expect(queued.map((t) => t.key)).toEqual(['2024/b']);
    // The whole bucket: both.
    expect((await post('scrub?bucket=photos')).body).toMatchObject({ units: 5, damaged: 2 });
    expect(await post('scrub?prefix=2024')).toMatchObject({ status: 400 });
    expect(await post('scrub?bucket=nosuch')).toMatchObject({ status: 404, body: { code: 'NoSuchBucket' } });
  });

  it('pages: a call stops at its shard-check budget and `next` resumes after the last unit checked', async () => {
    const { faulty, catalog } = await setup();
    const byId = new Map(faulty.map((b) => [b.id, b]));
    const seen: number[] = [];
    let after: string | null = null;
    do {
      const r: SelectionScrubReport = await scrubSelection(catalog, byId, { bucket: 'photos', prefix: '', mode: 'heads', after, maxCalls: 12 }, () => {});
      seen.push(r.units);
      after = r.next;
    } while (after !== null);
    expect(seen).toEqual([2, 2, 1]); // 6 shards a unit, 12 checks a call: every one of the 5 units once
  });

  it('the commands refuse what they cannot mean before calling the gateway', async () => {
    await expect(scrub.run(['--prefix', '2024/'])).rejects.toThrow(/--prefix goes with --bucket/);
    await expect(scrub.run(['--all', '--bucket', 'photos'])).rejects.toThrow(/not both/);
    await expect(locate.run(['photos'])).rejects.toThrow(/BUCKET and KEY/);
  });
});
