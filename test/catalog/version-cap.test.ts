/**
 * The per-key version cap (config maxVersionsPerKey, catalog rules.ts tooManyVersions): a write
 * that would give a key more versions is refused with a clear 400 before any shard is kept, in
 * every write path that adds a version; deletes (markers) are never refused; overwrites of a
 * bucket never versioned replace their one version and never reach it.
 */
import { describe, expect, it } from 'vitest';
import { localCatalog } from '../support/local-catalog.ts';
import { memoryEcStore } from '../support/memory-store.ts';

const put = (size: number) => ({ contentLength: size, metadata: { user: {} }, checksum: null, conditions: {} });
const stream = (b: Uint8Array) => new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(b), c.close()) });

describe('per-key version cap', () => {
  it('refuses the write past the cap, answers why, and keeps deletes working', async () => {
    const { store } = memoryEcStore(localCatalog({ maxVersionsPerKey: 3 }));
    await store.createBucket('b', { region: 'us-east-1' });
    await store.config.putBucketVersioning('b', 'Enabled');
    const write = (key: string, size = 10_000) => store.putObject('b', key, stream(new Uint8Array(size)), put(size));
    for (let i = 0; i < 3; i++) await write('k');
    await expect(write('k')).rejects.toMatchObject({
      code: 'InvalidRequest',
      status: 400,
      message: expect.stringMatching(/already has 3 versions.*maxVersionsPerKey/),
    });
    await expect(write('k', 10)).rejects.toMatchObject({ code: 'InvalidRequest' }); // inline: refused at its commit
    await write('other'); // another key is not affected
    expect((await store.deleteObject('b', 'k')).deleteMarker).toBe(true); // a fourth version: a marker is never refused
    const listed = await store.listObjectVersions('b', { prefix: 'k', delimiter: null, keyMarker: null, versionIdMarker: null, maxKeys: 100 });
    expect(listed.versions).toHaveLength(4);
    // Once a version is deleted, the key takes writes again.
    await store.deleteObject('b', 'k', { versionId: listed.versions.at(-1)!.versionId });
    await store.deleteObject('b', 'k', { versionId: listed.versions.at(-2)!.versionId });
    await write('k');
  });

  it('never limits overwrites in a bucket never versioned', async () => {
    const { store } = memoryEcStore(localCatalog({ maxVersionsPerKey: 1 }));
    await store.createBucket('b', { region: 'us-east-1' });
    for (let i = 0; i < 3; i++) await store.putObject('b', 'k', stream(new Uint8Array(10)), put(10));
  });
});
