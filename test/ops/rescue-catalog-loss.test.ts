/**
 * `shardgate rescue` after a catalog loss that a gateway without loss detection went on from
 * (issue 37): a bucket's objects and journal are stored, the catalog is replaced by an empty one,
 * a client creates another bucket and writes to it, and the new catalog's journal is stored over
 * the old one's numbers (what a gateway before catalog-loss.ts did). The rescue must not drop the
 * earlier bucket as "deleted" and exit 0 (it took only the newest write of each segment key): it
 * reads both catalogs' segments, keeps the earlier bucket, says the journal mixes two catalogs
 * and exits 1. An object known only from its shard headers takes the tags of its tag record. A bucket the bucket list does not hold (deleted; or hidden) is named SKIPPED with
 * its object count (exit 1), and --include-unlisted writes it. Each object's user metadata and
 * tags are in the output. Without the key, the output says the journal is sealed and which key
 * id it needs, never "none found".
 */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryBackend } from '../../backends/index.ts';
import type { Catalog } from '../../worker/catalog/ports.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { DEV_KEY_VALUE } from '../../worker/config/key-ring.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { flushJournal } from '../../worker/upkeep/journal.ts';
import { DEV_KEY_RING } from '../support/dev-encryption.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { readBytes } from '../support/read-bytes.ts';
import { shardgate } from './helpers.ts';

const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');
const bytes = (n: number, seed: number) => new Uint8Array(n).map((_, i) => (i * 31 + seed * 7) & 0xff);
const DEV_KEY = ['--key', `dev=${DEV_KEY_VALUE}`];

describe('rescue after a catalog loss whose new catalog journaled over the old', { timeout: 120_000 }, () => {
  let dir: string;
  let from: string[];
  const earlier = new Map([
    ['doc.txt', bytes(3000, 1)],
    ['photo.jpg', bytes(40_000, 2)],
  ]);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'shardgate-rescue-loss-'));
    const backends = Array.from({ length: 6 }, (_, i) => new MemoryBackend({ id: `m${i}`, domain: `zone-${i}` }));
    const config = parseConfig({
      backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
      policies: { ec: { k: 4, m: 2, blockSize: 4096, small: { threshold: 1024, mode: 'inline' } } },
      defaultPolicy: 'ec',
    });
    const units = new UnitStore(backends, undefined, { keyRing: DEV_KEY_RING });
    const gateway = (catalog: Catalog) => ({
      store: new EcStore({ catalog, units, settings: engineSettings(config) }),
      journal: () => flushJournal({ catalog, units, policy: config.policies.ec! }, { deadline: Date.now() + 60_000 }),
    });
    const put = (store: EcStore, bucket: string, key: string, body: Uint8Array, user: Record<string, string>) =>
      store.putObject(bucket, key, new ReadableStream({ start: (c) => (c.enqueue(body), c.close()) }), {
        contentLength: body.length,
        metadata: { user, contentType: 'text/x-test' },
        checksum: null,
        conditions: {},
      });

    const old = gateway(localCatalog());
    await old.store.createBucket('archive', { region: 'us-east-1' });
    for (const [key, body] of earlier) await put(old.store, 'archive', key, body, { owner: `o-${key}` });
    await old.store.putObjectTagging('archive', 'photo.jpg', [{ key: 'team', value: 'blue' }]);
    // A bucket deleted after its journal was stored (its segments and shards not collected yet).
    await old.store.createBucket('gone', { region: 'us-east-1' });
    await put(old.store, 'gone', 'left.bin', bytes(5000, 4), {});
    expect((await old.journal()).failed).toEqual([]);
    await old.store.deleteObject('gone', 'left.bin', {});
    await old.store.deleteBucket('gone');
    expect((await old.journal()).failed).toEqual([]);
    // Lost; a client writes before anyone looks, and the new catalog's journal is stored over the old numbers.
    const next = gateway(localCatalog());
    await next.store.createBucket('fresh', { region: 'us-east-1' });
    await put(next.store, 'fresh', 'new.bin', bytes(2000, 3), {});
    for (let i = 0; i < 3; i++) expect((await next.journal()).failed).toEqual([]);
    // After the last segment, known only from its shard headers: its tags, changed after the write, from its tag record.
    await put(next.store, 'fresh', 'late.bin', bytes(5000, 5), { k: 'v' });
    await next.store.putObjectTagging('fresh', 'late.bin', [{ key: 'stage', value: 'final' }]);

    from = [];
    for (const b of backends) {
      for (let cursor: string | undefined, first = true; first || cursor; first = false) {
        const page = await b.list('', cursor);
        for (const e of page.entries) {
          const path = join(dir, b.id, e.key);
          mkdirSync(dirname(path), { recursive: true });
          writeFileSync(path, await readBytes((await b.get(e.key)).body));
        }
        cursor = page.cursor;
      }
      from.push('--from', join(dir, b.id));
    }
  }, 60_000);

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("keeps the earlier bucket, says the journal mixes two catalogs (exit 1), writes each object's metadata and tags", async () => {
    const out = join(dir, 'out-1');
    const run = await shardgate(['rescue', ...from, '--out', out, ...DEV_KEY, '--json']);
    expect(run.code, run.stderr).toBe(1);
    const { summary, objects } = JSON.parse(run.stdout) as { summary: { journal: { bucketList: { doubts: string[] } } }; objects: Record<string, unknown>[] };
    expect(summary.journal.bucketList.doubts.join(' ')).toMatch(/found twice with different contents: two catalogs/);
    expect(
      objects
        .filter((o) => o.status === 'ok')
        .map((o) => `${o.bucket}/${o.key}`)
        .sort(),
    ).toEqual(['archive/doc.txt', 'archive/photo.jpg', 'fresh/late.bin', 'fresh/new.bin']);
    expect(objects.find((o) => o.key === 'late.bin')).toMatchObject({
      from: 'headers',
      metadata: { contentType: 'text/x-test', user: { k: 'v' }, tags: [{ key: 'stage', value: 'final' }] },
    });
    for (const [key, body] of earlier) expect(md5(readFileSync(join(out, 'archive', key))), key).toBe(md5(body));
    expect(objects.find((o) => o.key === 'photo.jpg')!.metadata).toEqual({
      contentType: 'text/x-test',
      user: { owner: 'o-photo.jpg' },
      tags: [{ key: 'team', value: 'blue' }],
    });
    const meta = JSON.parse(readFileSync(join(out, '_shardgate', 'buckets', 'archive.objects.json'), 'utf8')) as {
      key: string;
      contentType: string;
      user: Record<string, string>;
      tags: unknown[];
    }[];
    expect(meta.map((m) => [m.key, m.contentType, m.user, m.tags])).toEqual([
      ['doc.txt', 'text/x-test', { owner: 'o-doc.txt' }, []],
      ['photo.jpg', 'text/x-test', { owner: 'o-photo.jpg' }, [{ key: 'team', value: 'blue' }]],
    ]);
  });

  it('a bucket the bucket list does not hold is SKIPPED by name with its object count, never dropped silently; --include-unlisted writes it', async () => {
    const run = await shardgate(['rescue', ...from, '--out', join(dir, 'out-2'), ...DEV_KEY, '--bucket', 'gone']);
    expect(run.code, run.stderr).toBe(1);
    expect(run.stdout).toMatch(/SKIPPED bucket gone: .*1 object\(s\) not written/);
    const all = join(dir, 'out-3');
    const again = await shardgate(['rescue', ...from, '--out', all, ...DEV_KEY, '--bucket', 'gone', '--include-unlisted']);
    expect(again.stdout).not.toMatch(/SKIPPED/);
    expect(again.stdout).toMatch(/^ok +gone\/left\.bin/m);
    expect(md5(readFileSync(join(all, 'gone', 'left.bin')))).toBe(md5(bytes(5000, 4)));
  });

  it('without the key says the journal is sealed and which key id it needs', async () => {
    const run = await shardgate(['rescue', ...from, '--out', join(dir, 'out-4')]);
    expect(run.code).toBe(1);
    expect(run.stdout).not.toMatch(/journal: none found/);
    expect(run.stdout).toMatch(/journal: sealed: .*key\(s\) "dev"/);
  });
});
