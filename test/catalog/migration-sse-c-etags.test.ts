/**
 * SSE-C ETags (issue 37): the release before (test/fixtures/catalog-v5-sse-c, written by commit
 * 77cbe02's own code, see its generate.ts) showed an SSE-C object's plaintext MD5 as its ETag, in
 * listings and to conditional requests made without the key. Opened under this release, each
 * stored SSE-C version's ETag is rewritten once (schema-migrations.ts) to the opaque value new
 * writes get; the bytes read back unchanged with the key, conditions use the new ETag, a plain
 * object keeps its MD5, and an upload in progress completes with the part ETags its client holds.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { migrate } from '../../worker/catalog/schema-migrations.ts';
import { openCatalogFixture } from '../support/catalog-fixture.ts';
import { readBytes } from '../support/read-bytes.ts';
import { SqliteStorage } from '../support/sqlite-storage.ts';

const FIXTURE = new URL('../fixtures/catalog-v5-sse-c/', import.meta.url);
const expected = JSON.parse(readFileSync(new URL('expected.json', FIXTURE), 'utf8')) as {
  objects: Record<string, { size: number; md5: string; etag: string; sseC: boolean }>;
  upload: { key: string; uploadId: string; part: { partNumber: number; etag: string; size: number } };
};
/** The fixture's customer key (generate.ts makes it the same way). */
const CUSTOMER_KEY = new Uint8Array(32).map((_, i) => 7 * i + 3);
const POLICY = { k: 4, m: 2, blockSize: 4096, small: { threshold: 256, mode: 'inline' } };
const sse = { kind: 'c' as const, key: CUSTOMER_KEY, keyMD5: createHash('md5').update(CUSTOMER_KEY).digest('base64') };
const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');

describe('SSE-C ETags written by the release before', () => {
  it('the fixture really shows plaintext MD5s; the fix-up runs once', () => {
    expect(expected.objects['coded-secret']!.etag).toBe(`"${expected.objects['coded-secret']!.md5}"`);
    const old = SqliteStorage.open(readFileSync(new URL('bucket-vault.sqlite', FIXTURE)));
    const etags = () =>
      old.sql
        .exec<{ etag: string }>('SELECT etag FROM objects ORDER BY key')
        .toArray()
        .map((r) => r.etag);
    const before = etags();
    old.transactionSync(() => migrate(old.sql));
    const after = etags();
    expect(after.filter((e, i) => e !== before[i])).toHaveLength(3); // the three SSE-C objects
    old.transactionSync(() => migrate(old.sql));
    expect(etags()).toEqual(after); // again: nothing changes
  });

  it('become opaque in listings and heads, read back with the key, and serve conditions', async () => {
    const { store } = await openCatalogFixture(FIXTURE, ['__buckets__', 'bucket:vault'], POLICY);
    const listed = new Map(
      (await store.listObjects('vault', { prefix: '', delimiter: null, startAfter: null, maxKeys: 100 })).objects.map((o) => [o.key, o.etag]),
    );
    for (const [key, want] of Object.entries(expected.objects)) {
      const etag = listed.get(key)!;
      if (!want.sseC) {
        expect(etag, key).toBe(want.etag);
        continue;
      }
      expect(etag, key).not.toBe(want.etag);
      expect(etag, key).not.toContain(want.md5);
      expect(etag, key).toMatch(want.etag.includes('-') ? /^"[0-9a-f]{32}-2"$/ : /^"[0-9a-f]{32}"$/);
      const head = await store.headObject('vault', key, { conditions: { ifMatch: etag }, sse });
      expect(head.etag).toBe(etag);
      const body = await readBytes((await store.getObject('vault', key, { conditions: {}, sse })).body);
      expect({ size: body.length, md5: md5(body) }).toEqual({ size: want.size, md5: want.md5 });
      // The old ETag no longer matches, and without the key no condition is answered at all.
      await expect(store.headObject('vault', key, { conditions: { ifMatch: want.etag }, sse })).rejects.toMatchObject({ code: 'PreconditionFailed' });
      await expect(store.headObject('vault', key, { conditions: { ifNoneMatch: etag } })).rejects.toMatchObject({ code: 'InvalidRequest' });
    }
    const { upload } = expected;
    const done = await store.completeMultipartUpload('vault', upload.key, upload.uploadId, [{ partNumber: 1, etag: upload.part.etag }], { conditions: {} });
    expect(done.etag).toMatch(/-1"$/);
  });
});
