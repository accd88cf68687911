/**
 * A lost catalog rebuilt in the gateway from its journal (upkeep/journal-restore.ts, then
 * rebuild.ts for later writes), over the real catalog SQL and the real unit store on six memory
 * backends, sealed: after the journal is stored and a few more writes are made, the catalog is
 * replaced by an empty one; `rebuildCatalog` with the journal gives back every version in its
 * order and every delete marker, inline objects, the multipart object with its parts as
 * completed, bucket settings, nothing deleted, and the writes after the journal as the newest
 * versions. A second rebuild over the live catalog imports nothing. The new catalog's journal
 * goes on after the old one's numbers.
 */
import { describe, expect, it } from 'vitest';
import { MemoryBackend } from '../../backends/memory.ts';
import type { Catalog } from '../../worker/catalog/ports.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { flushJournal } from '../../worker/upkeep/journal.ts';
import { rebuildCatalog } from '../../worker/upkeep/rebuild.ts';
import { restoreKmsKeys } from '../../worker/upkeep/kms-key-restore.ts';
import { KmsKeys } from '../../worker/engine/kms-keys.ts';
import { DEV_KEY_RING } from '../support/dev-encryption.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { readBytes } from '../support/read-bytes.ts';

const bytes = (n: number, seed: number) => new Uint8Array(n).map((_, i) => (i * 7 + seed * 13) & 0xff);
const stream = (b: Uint8Array) => new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(b), c.close()) });
const ALL = { prefix: '', delimiter: null, keyMarker: null, versionIdMarker: null, maxKeys: 1000 };

describe('a lost catalog rebuilt from its journal, then from later shard headers', () => {
  it('every version, marker, inline and multipart object and setting comes back; later writes are newest', async () => {
    const backends = Array.from({ length: 6 }, (_, i) => new MemoryBackend({ id: `mem-${i}`, domain: `zone-${i}` }));
    const config = parseConfig({
      backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
      policies: { ec: { k: 4, m: 2, blockSize: 4096, small: { threshold: 1024, mode: 'inline' } } },
      defaultPolicy: 'ec',
    });
    const units = new UnitStore(backends, undefined, { keyRing: DEV_KEY_RING });
    const storeOver = (catalog: Catalog) => new EcStore({ catalog, units, settings: { ...engineSettings(config), minPartSize: 5000 } });
    const before = localCatalog();
    const store = storeOver(before);
    const put = async (bucket: string, key: string, body: Uint8Array) =>
      (
        await store.putObject(bucket, key, stream(body), {
          contentLength: body.length,
          metadata: { user: { k: key }, contentType: 'application/x-test' },
          checksum: null,
          conditions: {},
        })
      ).versionId;

    await store.createBucket('vault', { region: 'us-east-1' });
    await put('vault', 'tiny', bytes(100, 1)); // inline
    await put('vault', 'big', bytes(30_000, 2));
    await put('vault', 'gone', bytes(9_000, 3));
    await store.deleteObject('vault', 'gone');
    const mp = await store.createMultipartUpload('vault', 'mp', { metadata: { user: {} }, checksum: null });
    const parts = [bytes(6_000, 4), bytes(1_000, 5)];
    const etags = [];
    for (const [i, p] of parts.entries())
      etags.push({
        partNumber: i + 1,
        etag: (await store.uploadPart('vault', 'mp', mp.uploadId, i + 1, stream(p), { contentLength: p.length, checksum: null })).etag,
      });
    await store.uploadPart('vault', 'mp', mp.uploadId, 3, stream(bytes(5_500, 6)), { contentLength: 5_500, checksum: null }); // left out of the completion
    await store.completeMultipartUpload('vault', 'mp', mp.uploadId, etags, { conditions: {} });
    await store.config.putBucketCors('vault', [{ allowedOrigins: ['https://a.example'], allowedMethods: ['GET'], allowedHeaders: [], exposeHeaders: [] }]);

    await store.createBucket('hist', { region: 'us-east-1' });
    await store.config.putBucketVersioning('hist', 'Enabled');
    const docs = new Map<string, Uint8Array>();
    for (const [i, n] of [500, 20_000, 700].entries()) {
      const b = bytes(n, 10 + i);
      docs.set((await put('hist', 'doc', b))!, b);
    }
    await put('hist', 'removed', bytes(8_000, 20));
    await store.deleteObject('hist', 'removed');

    const policy = config.policies.ec!;
    expect((await flushJournal({ catalog: before, units, policy }, { deadline: Date.now() + 60_000 })).failed).toEqual([]);
    const journaled = (await before.listVersions('hist', ALL)).versions.map((v) => ({ key: v.key, versionId: v.versionId, deleteMarker: v.deleteMarker }));

    // After the journal's last segment: coded writes (their shard headers say so) to keys it knows.
    await new Promise((r) => setTimeout(r, 5));
    const newerBig = bytes(40_000, 30);
    await put('vault', 'big', newerBig);
    const newerDoc = bytes(12_000, 31);
    const newerDocId = (await put('hist', 'doc', newerDoc))!;

    // The catalog is lost: an empty one over the same backends, its buckets made as a rebuild makes
    // them (one partition: a split bucket's partitions come back folded into it, in the `split` project).
    const after = localCatalog({}, undefined, { split: false });
    const again = storeOver(after);
    for (const bucket of ['vault', 'hist']) {
      await after.insertBucket(bucket, 'us-east-1');
      const r = await rebuildCatalog(bucket, backends, after, DEV_KEY_RING, { journal: true });
      expect(r.journal, bucket).toMatchObject({ unreadable: [], doubts: [] });
      expect(r.journal!.asOf, bucket).not.toBeNull();
      expect(r.journal!.skipped, bucket).toBeUndefined();
    }
    const read = async (bucket: string, key: string, versionId?: string) =>
      readBytes((await again.getObject(bucket, key, { conditions: {}, ...(versionId ? { versionId } : {}) })).body);
    expect((await again.listObjects('vault', { prefix: '', delimiter: null, startAfter: null, maxKeys: 100 })).objects.map((o) => o.key)).toEqual([
      'big',
      'mp',
      'tiny',
    ]);
    expect(await read('vault', 'tiny')).toEqual(bytes(100, 1));
    expect(await read('vault', 'big')).toEqual(newerBig);
    expect(await read('vault', 'mp')).toEqual(new Uint8Array([...parts[0]!, ...parts[1]!]));
    await expect(again.getObject('vault', 'gone', { conditions: {} })).rejects.toMatchObject({ code: 'NoSuchKey' });
    expect(await after.getBucketCors('vault')).toMatchObject([{ allowedOrigins: ['https://a.example'] }]);

    expect(await after.getVersioning('hist')).toBe('Enabled');
    const listed = await after.listVersions('hist', ALL);
    // Every version and marker in its order, the write after the journal newest.
    // (A write after the journal gets a new version id: shard headers do not hold the one it had.)
    const now = listed.versions.map((v) => ({ key: v.key, versionId: v.versionId, deleteMarker: v.deleteMarker }));
    expect(now.slice(1)).toEqual(journaled);
    expect(now[0]).toMatchObject({ key: 'doc', deleteMarker: false });
    expect(now[0]!.versionId).not.toBe(newerDocId);
    expect(journaled.filter((v) => v.key === 'removed').map((v) => v.deleteMarker)).toEqual([true, false]);
    for (const [id, b] of docs) expect(await read('hist', 'doc', id)).toEqual(b);
    expect(await read('hist', 'doc')).toEqual(newerDoc);
    await expect(again.getObject('hist', 'removed', { conditions: {} })).rejects.toMatchObject({ code: 'NoSuchKey' });

    // Over a live catalog the journal is never merged in.
    const twice = await rebuildCatalog('hist', backends, after, DEV_KEY_RING, { journal: true });
    expect(twice.journal!.skipped).toMatch(/holds objects/);
    expect((await after.listVersions('hist', ALL)).versions.length).toBe(listed.versions.length);

    // The new catalog's journal continues after the old numbers (no segment key reused).
    const oldNewest = (await before.journalStatus('hist'))!.acked;
    await flushJournal({ catalog: after, units, policy }, { deadline: Date.now() + 60_000 });
    expect((await after.journalStatus('hist'))!.acked).toBeGreaterThan(oldNewest);
  });

  it('SSE-KMS (issue 43): the named keys come back from the bucket list journal, then their objects from the bucket journal and from later shard headers', async () => {
    const backends = Array.from({ length: 6 }, (_, i) => new MemoryBackend({ id: `mem-${i}`, domain: `zone-${i}` }));
    const config = parseConfig({
      backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
      policies: { ec: { k: 4, m: 2, blockSize: 4096, small: { threshold: 1024, mode: 'inline' } } },
      defaultPolicy: 'ec',
    });
    const gateway = (catalog: Catalog) => {
      const kms = new KmsKeys({ catalog, ring: DEV_KEY_RING, region: 'us-east-1' });
      const units = new UnitStore(backends, undefined, { keyRing: kms.ring });
      return { kms, units, store: new EcStore({ catalog, units, settings: engineSettings(config), kms }) };
    };
    const before = localCatalog();
    const old = gateway(before);
    await old.kms.create('vault-key');
    await old.kms.rotate('vault-key');
    const sse = { kind: 'kms' as const, keyId: 'vault-key' };
    const put = (key: string, body: Uint8Array) =>
      old.store.putObject('sealed', key, stream(body), { contentLength: body.length, metadata: { user: {} }, checksum: null, conditions: {}, sse });
    await old.store.createBucket('sealed', { region: 'us-east-1' });
    await put('tiny', bytes(200, 1)); // inline: its data key is in the journal only
    await put('big', bytes(30_000, 2));
    expect((await flushJournal({ catalog: before, units: old.units, policy: config.policies.ec! }, { deadline: Date.now() + 60_000 })).failed).toEqual([]);
    await put('later', bytes(20_000, 3)); // after the journal: its shard headers alone say so

    // The whole catalog is lost, the bucket list's instance with it: an empty one over the same backends.
    const after = localCatalog({}, undefined, { split: false });
    const again = gateway(after);
    expect(await again.kms.list()).toEqual([]);
    const keys = await restoreKmsKeys(backends, after, DEV_KEY_RING);
    expect(keys).toMatchObject({ restored: ['vault-key'], kept: [], unreadable: [] });
    expect((await again.kms.get('vault-key'))!.versions.map((v) => v.version)).toEqual([1, 2]);
    expect((await restoreKmsKeys(backends, after, DEV_KEY_RING)).kept).toEqual(['vault-key']); // the live record stands
    await after.insertBucket('sealed', 'us-east-1');
    const r = await rebuildCatalog('sealed', backends, after, again.kms.ring, { journal: true });
    expect(r.journal, JSON.stringify(r)).toMatchObject({ unreadable: [], doubts: [] });
    for (const [key, body] of [
      ['tiny', bytes(200, 1)],
      ['big', bytes(30_000, 2)],
      ['later', bytes(20_000, 3)],
    ] as const) {
      const got = await again.store.getObject('sealed', key, { conditions: {} });
      expect(await readBytes(got.body), key).toEqual(body);
    }
  });
});
