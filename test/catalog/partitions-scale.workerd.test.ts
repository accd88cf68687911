/// <reference types="@cloudflare/vitest-pool-workers/types" />
// Issue 39's scale proof in workerd, over the CATALOG Durable Object binding (native SQLite, one
// object per partition, calls between them as on Cloudflare): a bucket filled through the catalog's
// bulk write path (commitManifests: batches of 1,000 keys, a transaction per partition, 4 batches in
// flight), the cron's own split job run along the way with thresholds that spread it over 16+
// partitions, then ListObjects v2 pages with random prefix, delimiter, start-after and max-keys,
// followed page by page with splits and merges forced between pages and during them (at most
// MAX_FORCED: each moves tens of thousands of keys at 2 million), and ListObjectVersions pages,
// each compared with a sorted in-memory model. The Node twin
// (partitions-scale.test.ts, sql.js) runs 30,000 keys in test:full; this one runs only when asked:
// SHARDGATE_PARTITION_KEYS=2000000 npx vitest run --project workerd test/catalog/partitions-scale.workerd.test.ts
// and prints its figures (docs/PARTITIONS.md keeps the measured run).

import { env } from 'cloudflare:workers';
import { describe, expect, inject, it } from 'vitest';
import type { CatalogObject } from '../../worker/catalog/durable-object.ts';
import { DurableCatalog } from '../../worker/catalog/durable-catalog.ts';
import { listPage } from '../../worker/model/listing.ts';
import { splitDuePartitions } from '../../worker/upkeep/split-partitions.ts';
import { prng } from '../support/random.ts';
import { inlineManifest } from './fixtures.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    partitionKeys: number;
  }
}

const N = inject('partitionKeys') ?? 0;

function namespace(): DurableObjectNamespace<CatalogObject> {
  return (env as unknown as { CATALOG: DurableObjectNamespace<CatalogObject> }).CATALOG;
}

const SEGMENTS = ['logs', 'img', 'a', 'zz', 'data/2026', 'data/2025'];
/** Splits and merges forced during the listing phase, at most. */
const MAX_FORCED = 24;

/** Key i: unique by its base-36 tail, spread over the segments and 50 sub-prefixes, some one level deeper. ASCII, so string order is byte order. */
function keyOf(i: number): string {
  const h = Math.imul(i + 1, 2654435761) >>> 0;
  return `${SEGMENTS[h % SEGMENTS.length]}/${(h >>> 8) % 50}/${i.toString(36)}${(h >>> 16) % 3 === 0 ? '/x' : ''}`;
}

/** First index of `sorted` whose key is >= `k`. */
function lowerBound(sorted: string[], k: string): number {
  let [lo, hi] = [0, sorted.length];
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < k) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The model's page: listing.ts's own page over the sorted keys from the first one that can be listed. */
function modelPage(sorted: string[], o: { prefix: string; delimiter: string | null; startAfter: string | null; maxKeys: number }) {
  const from = lowerBound(sorted, o.startAfter !== null && o.startAfter > o.prefix ? o.startAfter : o.prefix);
  function* tail(): Generator<[string, string]> {
    for (let i = from; i < sorted.length; i++) yield [sorted[i]!, sorted[i]!];
  }
  return listPage(tail(), o);
}

describe.skipIf(N <= 0)(`a bucket of ${N} keys over 16+ partitions in workerd`, () => {
  it('lists exactly as the sorted model, whatever the parameters, while splits and merges go on between and during pages', async () => {
    const c = new DurableCatalog(namespace());
    const bucket = `scale-${Date.now().toString(36)}`;
    await c.insertBucket(bucket, 'auto');
    const thresholds = {
      autoSplit: true,
      splitRows: Math.ceil(N / 20),
      splitBytes: 1024 ** 4,
      splitRequestRate: 1e9,
      warnFraction: 0.8,
      autoMerge: false,
      mergeAfterDays: 3,
    };
    const t0 = Date.now();
    let splitMs = 0;
    let splits = 0;
    const runSplits = async () => {
      const s = Date.now();
      for (let run = 0; run < 200; run++) {
        const r = await splitDuePartitions(c, thresholds, { deadline: Date.now() + 3_600_000, maxSplits: 64 });
        expect(r.failed).toEqual([]);
        splits += r.split.length;
        if (!r.split.length) break;
      }
      splitMs += Date.now() - s;
    };
    // Filled in tenths, the cron's split job after each (as it runs every few minutes while a bucket grows).
    let next = 0;
    for (let tenth = 1; tenth <= 10; tenth++) {
      const end = Math.round((N * tenth) / 10);
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          for (let from = next; from < end; from = next) {
            next = Math.min(end, from + 1000);
            const items = Array.from({ length: next - from }, (_, j) => ({
              key: keyOf(from + j),
              manifest: inlineManifest(bucket, keyOf(from + j)),
              conditions: {},
            }));
            await c.commitManifests(bucket, items);
          }
        }),
      );
      next = end;
      await runSplits();
      // Progress, so that a run cut short still says how far it came and at what rate.
      const partitions = (await c.getPartitionMap(bucket)).ranges.length;
      console.log(
        `${end} of ${N} keys after ${((Date.now() - t0) / 1000).toFixed(0)} s (${(splitMs / 1000).toFixed(0)} s of it splitting): ${partitions} partitions`,
      );
    }
    const filledMs = Date.now() - t0 - splitMs;
    const map = await c.getPartitionMap(bucket);
    const sorted = Array.from({ length: N }, (_, i) => keyOf(i)).sort();
    console.log(
      `${N} keys: filled in ${(filledMs / 1000).toFixed(1)} s (${((filledMs * 1000) / N).toFixed(0)} µs a key), ${splits} splits in ${(splitMs / 1000).toFixed(1)} s, ${map.ranges.length} partitions`,
    );
    expect(map.ranges.length).toBeGreaterThanOrEqual(16);

    const rand = prng(2_000_000);
    const pick = (n: number) => (rand() * n) | 0;
    let pages = 0;
    const forced = { split: 0, merge: 0, refused: 0 };
    /** A split or a merge of the partition holding a random key (one holding too few keys, or the first partition, refuses). */
    const move = async (): Promise<void> => {
      const at = sorted[pick(sorted.length)]!;
      const merge = pick(2) === 0;
      const done = await (merge ? c.mergePartition(bucket, at) : c.splitPartition(bucket, at)).then(
        () => true,
        (e: { code?: string }) => {
          expect(merge ? ['InvalidRequest', 'OperationAborted'] : ['InvalidArgument', 'InvalidRequest']).toContain(e.code);
          return false;
        },
      );
      if (!done) forced.refused++;
      else if (merge) forced.merge++;
      else forced.split++;
    };
    const budget = () => forced.split + forced.merge + forced.refused < MAX_FORCED;
    const listStart = Date.now();
    for (let round = 0; round < 40; round++) {
      const prefix = ['', 'data/', 'logs/1', 'a/', 'img/4', 'd', 'zz/7/'][pick(7)]!;
      const delimiter = [null, '/', '2'][pick(3)]!;
      const startAfter = pick(2) ? null : sorted[pick(sorted.length)]!;
      const maxKeys = [1, 7, 100, 1000][pick(4)]!;
      const label = JSON.stringify({ prefix, delimiter, startAfter, maxKeys });
      let [after, modelAfter] = [startAfter, startAfter];
      for (let page = 0; page < 12; page++) {
        const want = modelPage(sorted, { prefix, delimiter, startAfter: modelAfter, maxKeys });
        const during = budget() && pick(8) === 0 ? move() : null; // its calls and the page's interleave
        const got = await c.listManifests(bucket, { prefix, delimiter, startAfter: after, maxKeys });
        await during;
        pages++;
        expect({ keys: got.objects.map((o) => o.key), prefixes: got.commonPrefixes, truncated: got.isTruncated }, `${label} page ${page}`).toEqual({
          keys: want.entries.flatMap((e) => (e.kind === 'key' ? [e.key] : [])),
          prefixes: want.entries.flatMap((e) => (e.kind === 'prefix' ? [e.prefix] : [])),
          truncated: want.isTruncated,
        });
        if (budget() && pick(4) === 0) await move();
        if (!got.isTruncated) break;
        [after, modelAfter] = [got.lastEntry, want.lastEntry];
      }
      // ListObjectVersions: one page from the same start, compared with the model's keys (one version each).
      const versions = await c.listVersions(bucket, { prefix, delimiter: null, keyMarker: startAfter, versionIdMarker: null, maxKeys });
      const expected = modelPage(sorted, { prefix, delimiter: null, startAfter, maxKeys });
      expect(
        versions.versions.map((v) => v.key),
        `versions ${label}`,
      ).toEqual(expected.entries.flatMap((e) => (e.kind === 'key' ? [e.key] : [])));
    }
    const after = await c.getPartitionMap(bucket);
    console.log(
      `${pages} pages and 40 version pages equal the model in ${((Date.now() - listStart) / 1000).toFixed(1)} s, ${forced.split} splits and ${forced.merge} merges forced between and during pages (${forced.refused} refused): ${after.ranges.length} partitions`,
    );
  }, 14_400_000);
});
