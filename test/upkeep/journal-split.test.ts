/**
 * A bucket split on line, rescued from its journals (upkeep/journal-restore.ts via rebuild.ts;
 * catalog/journal-replay.ts folds the partitions): a key lives in two journals for a while (the
 * new partition's copy, the old partition's rows until its deletion of them is journaled). The
 * root's map decides whose rows count, so a key deleted in its new partition after the split is
 * never brought back from the old partition's older journal; and when the new partition's journal
 * is missing, the old one's rows are taken, with a doubt saying so.
 */
import { describe, expect, it } from 'vitest';
import { MemoryBackend } from '../../backends/memory.ts';
import type { JournalCatalog } from '../../worker/catalog/ports.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { flushJournal } from '../../worker/upkeep/journal.ts';
import { rebuildCatalog } from '../../worker/upkeep/rebuild.ts';
import { partitionJournal } from '../../worker/catalog/routing.ts';
import { DEV_KEY_RING } from '../support/dev-encryption.ts';
import { localCatalog } from '../support/local-catalog.ts';

const body = (seed: number) => new Uint8Array(200).map((_, i) => (i + seed) & 0xff);
const stream = (b: Uint8Array) => new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(b), c.close()) });
const keyAt = (i: number) => `k/${String(i).padStart(2, '0')}`;

/**
 * A bucket of 40 keys (k/00..k/39) over six memory backends, its journal flushed by `flush`
 * (only the journal instances named, or every one), and `rescue`, which rebuilds it from the
 * backends' journals into a new catalog and lists its keys.
 */
async function journaledBucket(bucket: string) {
  const backends = Array.from({ length: 6 }, (_, i) => new MemoryBackend({ id: `mem-${i}`, domain: `zone-${i}` }));
  const config = parseConfig({
    backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
    policies: { ec: { k: 4, m: 2, blockSize: 4096, small: { threshold: 1024, mode: 'inline' } } },
    defaultPolicy: 'ec',
  });
  const units = new UnitStore(backends, undefined, { keyRing: DEV_KEY_RING });
  const policy = config.policies.ec!;
  const before = localCatalog({}, undefined, { split: false });
  const store = new EcStore({ catalog: before, units, settings: engineSettings(config) });
  const put = (key: string, seed: number) =>
    store.putObject(bucket, key, stream(body(seed)), { contentLength: 200, metadata: { user: {} }, checksum: null, conditions: {} });
  await store.createBucket(bucket, { region: 'us-east-1' });
  for (let i = 0; i < 40; i++) await put(keyAt(i), i);
  const flush = async (journals: string[] | null) => {
    const catalog: JournalCatalog = Object.create(before, {
      journalInstances: { value: async () => (await before.journalInstances()).filter((j) => journals === null || journals.includes(j)) },
    });
    expect((await flushJournal({ catalog, units, policy }, { deadline: Date.now() + 60_000 })).failed).toEqual([]);
  };
  const rescue = async () => {
    const after = localCatalog({}, undefined, { split: false });
    await after.insertBucket(bucket, 'us-east-1');
    const r = await rebuildCatalog(bucket, backends, after, DEV_KEY_RING, { journal: true });
    const keys = (await after.listManifests(bucket, { prefix: '', delimiter: null, startAfter: null, maxKeys: 100 })).objects.map((o) => o.key);
    return { r, keys, after };
  };
  return { before, store, put, flush, rescue };
}

async function scenario(flushNewPartition: boolean) {
  const { before, store, put, flush: flushOnly, rescue } = await journaledBucket('moved');
  const first = (await before.splitPartition('moved', keyAt(0), keyAt(10)))!;
  await flushOnly(null); // every partition's journal holds k/10..k/39 in the first partition after the root
  const middle = first.ranges[1]!.instance;
  const second = (await before.splitPartition('moved', keyAt(39), keyAt(30)))!; // driven by that partition, not the root
  const upper = second.ranges[2]!.instance;
  await store.deleteObject('moved', keyAt(35));
  await put(keyAt(36), 99);
  // The old partition's journal is not flushed again: it still shows k/30..k/39 as its own.
  await flushOnly(['moved', ...(flushNewPartition ? [partitionJournal(upper)] : [])]);
  expect(partitionJournal(middle)).not.toBe(partitionJournal(upper));
  return await rescue();
}

describe('a bucket split on line, rescued from its partitions journals', () => {
  it("takes a key's rows from the partition the map names: a key deleted there after the split stays deleted", async () => {
    const { r, keys, after } = await scenario(true);
    expect(r.journal!.doubts).toEqual([]);
    expect(keys).toEqual(Array.from({ length: 40 }, (_, i) => keyAt(i)).filter((k) => k !== keyAt(35)));
    expect((await after.getManifest('moved', keyAt(36)))!.size).toBe(200);
    expect(await after.getManifest('moved', keyAt(35))).toBeNull();
  });

  it("takes the old partition's rows when the new one's journal is missing, and says so", async () => {
    const { r, keys } = await scenario(false);
    expect(keys).toHaveLength(40); // k/35's deletion was journaled nowhere: the last journaled state has it
    expect(r.journal!.doubts.join('\n')).toMatch(/10 keys were taken from the journal of a partition they had left/);
  });
});

describe('a bucket whose partitions merged on line, rescued from its journals', () => {
  async function merged(flushRetired: boolean) {
    const { before, store, put, flush, rescue } = await journaledBucket('joined');
    await before.splitPartition('joined', keyAt(0), keyAt(10));
    const split = (await before.splitPartition('joined', keyAt(39), keyAt(30)))!;
    const [middle, upper] = [split.ranges[1]!.instance, split.ranges[2]!.instance];
    await flush(null); // the upper partition's journal holds k/30..k/39
    const map = (await before.mergePartition('joined', keyAt(35)))!;
    expect(map.ranges.map((r) => r.instance)).toEqual(['bucket:joined', middle]);
    expect(await before.journalInstances()).toContain(partitionJournal(upper)); // kept up, and known to the loss look
    await store.deleteObject('joined', keyAt(35));
    await put(keyAt(36), 99);
    await flush(flushRetired ? null : ['joined', partitionJournal(middle)]);
    return { ...(await rescue()), rewritten: (await before.getManifest('joined', keyAt(36)))!.etag };
  }

  for (const flushRetired of [false, true]) {
    it(`brings back every key and no deleted one, ${flushRetired ? 'the merged-away journal flushed empty' : "the merged-away partition's older journal left as it was"}`, async () => {
      const { r, keys, after, rewritten } = await merged(flushRetired);
      expect(r.journal!.doubts).toEqual([]);
      expect(keys).toEqual(Array.from({ length: 40 }, (_, i) => keyAt(i)).filter((k) => k !== keyAt(35)));
      expect((await after.getManifest('joined', keyAt(36)))!.etag).toBe(rewritten); // the write after the merge, not the one before
      expect(await after.getManifest('joined', keyAt(35))).toBeNull();
    });
  }
});
