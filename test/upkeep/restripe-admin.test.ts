/**
 * The admin API of a re-stripe (issue 26), signed as `shardgate restripe` signs it, over memory
 * backends and the product's catalog: restripe-status says what is left before anything is
 * rewritten, restripe rewrites up to `max` versions and answers the progress, the status ends
 * done with 0 left, and `shardgate restripe` prints it as a table; a bad `max` is refused.
 */
import { readBytes } from '../support/read-bytes.ts';
import { AwsClient } from 'aws4fetch';
import { describe, expect, it } from 'vitest';
import { MemoryBackend } from '../../backends/index.ts';
import { progressText } from '../../cli/commands/restripe.ts';
import { createAdmin } from '../../worker/app/admin.ts';
import { createApp } from '../../worker/app/app.ts';
import { makeAuthenticate } from '../../worker/app/auth-gate.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { restripeBatch } from '../../worker/upkeep/restripe.ts';
import { restripeProgress, type BucketRestripeProgress } from '../../worker/upkeep/restripe-progress.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { testS3Settings } from '../support/memory-store.ts';

const KEY = { accessKeyId: 'ops', secretAccessKey: 'ops-secret-for-tests' };

describe('admin restripe, restripe-status', () => {
  it('reports what is left, rewrites on request, and ends done', async () => {
    const backends = Array.from({ length: 11 }, (_, i) => new MemoryBackend({ id: `m${i}`, domain: `d${i}` }));
    const configOf = (policy: string) =>
      parseConfig({
        backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
        policies: { old: { k: 4, m: 2, blockSize: 65536 }, wide: { k: 8, m: 3, blockSize: 65536 } },
        defaultPolicy: 'old',
        buckets: { photos: policy },
        credentials: [KEY],
      });
    const catalog = localCatalog({ garbageGraceMs: 0 });
    const units = new UnitStore(backends);
    const writer = new EcStore({ catalog, units, settings: engineSettings(configOf('old')) });
    await writer.createBucket('photos', { region: 'us-east-1' });
    for (let i = 0; i < 12; i++)
      await writer.putObject('photos', `p${i}`, new ReadableStream({ start: (c) => (c.enqueue(new Uint8Array(70_000).fill(i)), c.close()) }), {
        contentLength: 70_000,
        metadata: { user: {} },
        checksum: null,
        conditions: {},
      });

    const config = configOf('wide');
    const settings = engineSettings(config);
    const store = new EcStore({ catalog, units, settings });
    const authenticate = makeAuthenticate(config, {});
    const admin = createAdmin({
      authenticate,
      catalog,
      backends,
      region: 'us-east-1',
      scrub: { mode: 'heads', unitsPerRun: 10 },
      enqueueRepair: () => {},
      repair: async () => {},
      restripe: {
        run: (o) => restripeBatch({ catalog, units, settings, graceMs: 0, writeReservationSeconds: 3600, fleet: [] }, { ...o, deadline: Date.now() + 30_000 }),
        progress: () => restripeProgress(catalog, settings),
      },
    });
    const app = createApp({ store, config: store.config, authenticate, settings: testS3Settings(), admin });
    const client = new AwsClient({ ...KEY, service: 's3', region: 'us-east-1', retries: 0 });
    const post = async (path: string) => {
      const res = await app.fetch(await client.sign(`http://gw.test/_shardgate/admin/${path}`, { method: 'POST' }));
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };

    const before = (await post('restripe-status')).body.buckets as BucketRestripeProgress[];
    expect(before).toHaveLength(1);
    expect(before[0]).toMatchObject({ bucket: 'photos', policy: 'wide', left: { units: 12, bytes: 12 * 70_000 }, done: false, rewritten: { versions: 0 } });
    expect(progressText(before)).toMatch(/^photos\s+wide\s+12\s/m);

    expect((await post('restripe?max=0')).status).toBe(400);
    const first = (await post('restripe?max=5')).body as { rewritten: number; stopped: boolean; progress: BucketRestripeProgress[] };
    expect(first).toMatchObject({ rewritten: 5, stopped: true });
    expect(first.progress[0]).toMatchObject({ left: { units: 7 }, inPass: true, rewritten: { versions: 5, bytes: 5 * 70_000 } });
    const rest = (await post('restripe?bucket=photos&max=1000')).body as { rewritten: number; progress: BucketRestripeProgress[] };
    expect(rest.rewritten).toBe(7);
    const after = (await post('restripe-status')).body.buckets as BucketRestripeProgress[];
    expect(after[0]).toMatchObject({ left: { units: 0, bytes: 0 }, done: true, rewritten: { versions: 12, bytes: 12 * 70_000 } });
    expect(progressText(after)).toMatch(/^photos\s+wide\s+0\s.*done/m);
    for (let i = 0; i < 12; i++) {
      const got = await store.getObject('photos', `p${i}`, { conditions: {} });
      expect(await readBytes(got.body)).toEqual(new Uint8Array(70_000).fill(i));
    }
  });
});
