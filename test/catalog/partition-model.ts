// What a bucket must hold while its partitions split and merge on line (partition-split.test.ts,
// partition-merge.test.ts): a model of each key's current manifest, and the checks that every
// key reads as the model says, the listing is the model's, the ledger counts it, and each
// partition holds exactly its range's keys.

import { expect } from 'vitest';
import type { ObjectManifest } from '../../worker/format/manifest.ts';
import type { DurableCatalog } from '../../worker/catalog/durable-catalog.ts';
import type { LocalCatalogNamespace } from '../support/local-catalog.ts';
import { byUtf8, manifest } from './fixtures.ts';

export type Local = DurableCatalog & { namespace: LocalCatalogNamespace };

export const keyAt = (i: number) => `k/${String(i).padStart(4, '0')}`;

/** What a bucket must hold: key -> its current manifest (null: deleted). */
export type Model = Map<string, ObjectManifest | null>;

export async function fill(c: Local, bucket: string, n: number, model: Model): Promise<void> {
  for (let i = 0; i < n; i++) {
    const m = manifest(bucket, keyAt(i));
    await c.commitManifest(bucket, keyAt(i), m, {});
    model.set(keyAt(i), m);
  }
}

/** Every key reads as the model says, the listing is the model's, health counts the model's objects, and no key lives twice. */
export async function expectHolds(c: Local, bucket: string, model: Model, label = '', versions?: number): Promise<void> {
  for (const [key, m] of model) expect(await c.getManifest(bucket, key), `${label} ${key}`).toEqual(m);
  const listed: string[] = [];
  for (let after: string | null = null; ; ) {
    const page = await c.listManifests(bucket, { prefix: '', delimiter: null, startAfter: after, maxKeys: 37 });
    listed.push(...page.objects.map((o) => o.key));
    if (!page.isTruncated) break;
    after = page.lastEntry;
  }
  const live = [...model].filter(([, m]) => m !== null).map(([k]) => k);
  expect(listed, label).toEqual(live.sort(byUtf8));
  const health = await c.bucketHealth(bucket, new Date());
  expect(health.objects, label).toBe(versions ?? live.length); // the ledger counts every stored version
  // Each partition holds exactly its range's keys: nothing left behind, nothing copied twice.
  const map = await c.getPartitionMap(bucket);
  const held = new Map<string, string>();
  for (const [i, r] of map.ranges.entries()) {
    const sql = c.namespace.instance(r.instance).storage.sql;
    for (const { key } of sql.exec<{ key: string }>('SELECT DISTINCT key FROM versions').toArray()) {
      expect(held.get(key), `${label} ${key} in two partitions`).toBeUndefined();
      held.set(key, r.instance);
      expect(key >= r.low && (i + 1 === map.ranges.length || key < map.ranges[i + 1]!.low), `${label} ${key} outside ${r.instance}`).toBe(true);
    }
  }
}

/**
 * Eight writers, alternating between `isolates`, overwriting and deleting random keys of `bucket`
 * (keyAt(0..879)) and keeping `model` as they go, until stop(); each writes at least 20 times.
 * stop() answers how many writes the first isolate's namespace counted meanwhile.
 */
export function writersOf(isolates: Local[], bucket: string, model: Model, next: () => number): { stop(): Promise<number> } {
  const c = isolates[0]!;
  const counted = () => ['commitManifest', 'removeManifest'].reduce((n, m) => n + (c.namespace.calls.get(m) ?? 0), 0);
  const before = counted();
  let done = false;
  const traffic = async (who: Local) => {
    for (let n = 0; !done || n < 20; n++) {
      const key = keyAt((next() * 880) | 0);
      if (next() < 0.3) {
        await who.removeManifest(bucket, key);
        if (model.has(key)) model.set(key, null);
      } else {
        const m = manifest(bucket, key);
        await who.commitManifest(bucket, key, m, {});
        model.set(key, m);
      }
    }
  };
  const writers = Array.from({ length: 8 }, (_, i) => traffic(isolates[i % isolates.length]!));
  return {
    async stop() {
      const during = counted() - before;
      done = true;
      await Promise.all(writers);
      return during;
    },
  };
}
