// Issue 39's scale proof (2,000 keys in npm test, 30,000 in npm run test:full;
// SHARDGATE_PARTITION_KEYS=N for another size): a bucket filled through the catalog's write path,
// split on line by the cron's own job with thresholds set so it spreads over at least 16
// partitions, then ListObjects v1/v2 and ListObjectVersions with random prefix, delimiter,
// markers, max-keys and continuation compared with a sorted in-memory model, page by page, while
// further splits and merges are forced between pages and during them (a page's calls and a
// split or merge in flight at once).
// Measured here (sql.js in Node, 2 cores, load 5-6): filling costs 0.3-0.6 ms a key and a split
// 1-2 ms per key moved (50,000 keys: filled in 17 s, 31 splits to 32 partitions in 222 s), so
// the 2 million keys would take hours in this harness (native
// SQLite in a Durable Object is far faster); the default is 30,000.

import { describe, expect, it } from 'vitest';
import { localCatalog } from '../support/local-catalog.ts';
import { inlineManifest, modelListing } from './fixtures.ts';
import { prng } from '../support/random.ts';
import { splitDuePartitions } from '../../worker/upkeep/split-partitions.ts';
import { listPage } from '../../worker/model/listing.ts';

const N = Number(process.env.SHARDGATE_PARTITION_KEYS ?? (process.env.SHARDGATE_FULL_SIZE === '1' ? 30_000 : 2_000));

describe(`a bucket of ${N} keys split on line into 16+ partitions`, () => {
  it('lists exactly as the sorted model, whatever the parameters, while splits and merges go on between and during pages', async () => {
    const next = prng(2_000_000);
    const rand = (n: number) => (next() * n) | 0;
    const c = localCatalog({}, undefined, { split: false });
    await c.insertBucket('big', 'auto');
    const segments = ['logs', 'img', 'a', 'zz', 'data/2026', 'data/2025'];
    const keys = new Set<string>();
    while (keys.size < N) keys.add(`${segments[rand(segments.length)]}/${rand(50)}/${rand(1e6).toString(36)}${rand(3) === 0 ? '/x' : ''}`);
    const sorted = [...keys].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    const started = Date.now();
    for (const key of keys) await c.commitManifest('big', key, inlineManifest('big', key), {});
    const filled = Date.now() - started;
    const thresholds = {
      autoSplit: true,
      splitRows: Math.ceil(N / 16),
      splitBytes: 1024 ** 4,
      splitRequestRate: 1e9,
      warnFraction: 0.8,
      autoMerge: false,
      mergeAfterDays: 3,
    };
    let [splits, merges] = [0, 0];
    for (let run = 0; run < 40; run++) {
      const r = await splitDuePartitions(c, thresholds, { deadline: Date.now() + 600_000, maxSplits: 64 });
      expect(r.failed).toEqual([]);
      splits += r.split.length;
      if (!r.split.length) break;
    }
    const map = await c.getPartitionMap('big');
    console.log(`${N} keys: filled in ${filled} ms, ${splits} splits in ${Date.now() - started - filled} ms, ${map.ranges.length} partitions`);
    expect(map.ranges.length).toBeGreaterThanOrEqual(16);

    for (let round = 0; round < 60; round++) {
      const prefix = ['', 'data/', 'logs/1', 'a/', 'img/4', 'd'][rand(6)]!;
      const delimiter = [null, '/', '2'][rand(3)]!;
      const marker = rand(2) ? null : sorted[rand(sorted.length)]!;
      const maxKeys = [1, 7, 100, 1000][rand(4)]!;
      const label = JSON.stringify({ prefix, delimiter, marker, maxKeys });
      let after = marker;
      let model = marker;
      for (let page = 0; page < 30; page++) {
        const want = listPage(
          sorted.map((k) => [k, k] as [string, string]),
          { prefix, delimiter, startAfter: model, maxKeys },
        );
        // A split or merge somewhere in the key space, between pages or during one (its calls and the move's interleave).
        const move = (): Promise<unknown> => {
          const key = sorted[rand(sorted.length)]!;
          if (rand(2) === 0)
            return c.splitPartition('big', key).then(
              () => splits++,
              (e: { code?: string }) => expect(['InvalidArgument', 'InvalidRequest']).toContain(e.code),
            );
          return c.mergePartition('big', key).then(
            () => merges++,
            (e: { code?: string }) => expect(['InvalidRequest', 'OperationAborted']).toContain(e.code),
          );
        };
        const during = rand(6) === 0 ? move() : null;
        const got = await c.listManifests('big', { prefix, delimiter, startAfter: after, maxKeys });
        await during;
        expect({ keys: got.objects.map((o) => o.key), prefixes: got.commonPrefixes, truncated: got.isTruncated }, `${label} page ${page}`).toEqual({
          keys: want.entries.flatMap((e) => (e.kind === 'key' ? [e.key] : [])),
          prefixes: want.entries.flatMap((e) => (e.kind === 'prefix' ? [e.prefix] : [])),
          truncated: want.isTruncated,
        });
        if (rand(4) === 0) await move();
        if (!got.isTruncated) break;
        [after, model] = [got.lastEntry, want.lastEntry];
      }
      // ListObjectVersions: one page of each kind of start compared with the model's keys.
      const versions = await c.listVersions('big', { prefix, delimiter: null, keyMarker: marker, versionIdMarker: null, maxKeys });
      const expected = modelListing(
        sorted.filter((k) => marker === null || k > marker),
        prefix,
        null,
      ).slice(0, maxKeys);
      expect(
        versions.versions.map((v) => v.key),
        `versions ${label}`,
      ).toEqual(expected.map((e) => e.name));
    }
    const end = await c.getPartitionMap('big');
    console.log(`listing phase: ${splits} splits in all, ${merges} merges, ${end.ranges.length} partitions at the end`);
    expect(merges).toBeGreaterThan(0);
  }, 3_600_000);
});
