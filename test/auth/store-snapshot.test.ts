/**
 * The mutation suites' store snapshot (helpers/store-snapshot.ts) reuses its last reading while no
 * catalog instance wrote a row: a write of any kind must still show as a change, or "refused, yet
 * the store changed" could never fail.
 */
import { describe, expect, it } from 'vitest';
import { gateApp } from '../support/gate-app.ts';
import { snapshotStore } from './helpers/store-snapshot.ts';

const stream = (text: string) => new Response(text).body!;

describe('the store snapshot of the mutation suites', () => {
  it('is the same while nothing is written, and changes with every kind of write', async () => {
    const g = gateApp();
    const empty = await snapshotStore(g.catalog);
    expect(await snapshotStore(g.catalog)).toBe(empty);
    await g.store.createBucket('b', { region: 'us-east-1' });
    const withBucket = await snapshotStore(g.catalog);
    expect(withBucket).not.toBe(empty);
    await g.store.putObject('b', 'k', stream('one'), { contentLength: 3, contentMD5: null, metadata: { user: {} }, checksum: null, conditions: {} });
    const withObject = await snapshotStore(g.catalog);
    expect(withObject).not.toBe(withBucket);
    expect(await snapshotStore(g.catalog)).toBe(withObject);
    // The same key and length again: another version, so another snapshot.
    await g.store.putObject('b', 'k', stream('two'), { contentLength: 3, contentMD5: null, metadata: { user: {} }, checksum: null, conditions: {} });
    const overwritten = await snapshotStore(g.catalog);
    expect(overwritten).not.toBe(withObject);
    const { uploadId } = await g.store.createMultipartUpload('b', 'u', { metadata: { user: {} }, checksum: null });
    const withUpload = await snapshotStore(g.catalog);
    expect(withUpload).not.toBe(overwritten);
    await g.store.uploadPart('b', 'u', uploadId, 1, stream('part'), { contentLength: 4, contentMD5: null, checksum: null });
    expect(await snapshotStore(g.catalog)).not.toBe(withUpload);
  });
});
