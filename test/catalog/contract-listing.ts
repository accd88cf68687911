// ListObjects cases of the catalog contract: prefix, any-string delimiter, one max-keys budget
// shared by keys and common prefixes, paging by lastEntry -> startAfter without ever repeating a
// common prefix, and UTF-8 byte order (astral characters after U+FFFD, unlike JS string order).
// Expected listings come from modelListing (fixtures.ts), not from another implementation.

import { expect, it } from 'vitest';
import type { ListObjectsOptions } from '../../worker/model/object-store.ts';
import type { Ctx } from './contract.ts';
import { byUtf8, manifest, modelListing } from './fixtures.ts';

type Entry = { kind: 'key' | 'prefix'; name: string };

export function defineListingCases({ c, bucket }: Ctx) {
  async function withKeys(keys: string[]): Promise<string> {
    const b = await bucket();
    for (const key of keys) await c().commitManifest(b, key, manifest(b, key), {});
    return b;
  }

  async function page(b: string, o: Partial<ListObjectsOptions>) {
    const r = await c().listManifests(b, { prefix: '', delimiter: null, startAfter: null, maxKeys: 1000, ...o });
    const entries: Entry[] = [
      ...r.objects.map((x) => ({ kind: 'key' as const, name: x.key })),
      ...r.commonPrefixes.map((p) => ({ kind: 'prefix' as const, name: p })),
    ];
    // A common prefix sorts where its first key would, so name order is listing order.
    return { ...r, entries: entries.sort((x, y) => byUtf8(x.name, y.name)) };
  }

  /** Pages through with `maxKeys` per page, checking each page, and returns every entry in order. */
  async function pageThrough(b: string, o: Partial<ListObjectsOptions>, maxKeys: number): Promise<Entry[]> {
    const all: Entry[] = [];
    let startAfter: string | null = o.startAfter ?? null;
    for (let pages = 0; pages < 200; pages++) {
      const r = await page(b, { ...o, startAfter, maxKeys });
      expect(r.entries.length).toBeLessThanOrEqual(maxKeys);
      all.push(...r.entries);
      if (!r.isTruncated) return all;
      expect(r.entries).toHaveLength(maxKeys);
      expect(r.lastEntry).toBe(r.entries.at(-1)!.name);
      startAfter = r.lastEntry;
    }
    throw new Error('listing did not end');
  }

  it('rolls keys up into common prefixes of a one-character delimiter', async () => {
    const b = await withKeys(['a/1', 'a/2', 'b', 'c/x/y', 'd']);
    const r = await page(b, { delimiter: '/' });
    expect(r.objects.map((o) => o.key)).toEqual(['b', 'd']);
    expect(r.commonPrefixes).toEqual(['a/', 'c/']);
    expect(r).toMatchObject({ isTruncated: false, lastEntry: 'd' });
    const one = r.objects[0];
    expect(one).toMatchObject({ key: 'b', size: 100, checksum: { algorithm: 'CRC32', type: 'FULL_OBJECT', value: 'AAAAAA==' } });
    expect(one.etag).toMatch(/^".+"$/);
    expect(one.lastModified).toEqual(new Date(Date.UTC(2025, 0, 2, 3, 4, 5)));
    const under = await page(b, { prefix: 'c/', delimiter: '/' });
    expect(under).toMatchObject({ objects: [], commonPrefixes: ['c/x/'] });
  });

  it('lists under a prefix with a multi-character delimiter', async () => {
    const b = await withKeys(['logs--2024--a', 'logs--2024--b', 'logs--2025', 'logs-x', 'logs--', 'logz']);
    const r = await page(b, { prefix: 'logs--', delimiter: '--' });
    expect(r.objects.map((o) => o.key)).toEqual(['logs--', 'logs--2025']);
    expect(r.commonPrefixes).toEqual(['logs--2024--']);
    const flat = await page(b, { prefix: 'logs' });
    expect(flat.objects.map((o) => o.key)).toEqual(['logs--', 'logs--2024--a', 'logs--2024--b', 'logs--2025', 'logs-x']);
  });

  it('shares max-keys between keys and common prefixes; max-keys 0 lists nothing', async () => {
    const b = await withKeys(['a/1', 'a/2', 'b', 'c/1']);
    const r = await page(b, { delimiter: '/', maxKeys: 2 });
    expect(r.commonPrefixes).toEqual(['a/']);
    expect(r.objects.map((o) => o.key)).toEqual(['b']);
    expect(r).toMatchObject({ isTruncated: true, lastEntry: 'b' });
    const exact = await page(b, { delimiter: '/', maxKeys: 3 });
    expect(exact).toMatchObject({ isTruncated: false, lastEntry: 'c/' });
    expect(await page(b, { delimiter: '/', maxKeys: 0 })).toMatchObject({ objects: [], commonPrefixes: [], isTruncated: false });
  });

  it('pages by lastEntry -> startAfter without repeating or losing a prefix', async () => {
    const keys = ['a', 'b/1', 'b/2', 'b/3', 'b0', 'c/d/1', 'c/d/2', 'c/e', 'c1', 'd/', 'd//x', 'e'];
    for (let i = 0; i < 12; i++) keys.push(`f/${String(i).padStart(2, '0')}/x`, `g${i}`);
    const b = await withKeys(keys);
    for (const delimiter of [null, '/']) {
      for (const prefix of ['', 'c/', 'f/']) {
        const want = modelListing(keys, prefix, delimiter);
        for (const maxKeys of [1, 2, 5, 1000]) {
          expect(await pageThrough(b, { prefix, delimiter }, maxKeys), `prefix=${prefix} delimiter=${delimiter} maxKeys=${maxKeys}`).toEqual(want);
        }
      }
    }
  });

  it('resumes after startAfter, skipping everything under it when it is a common prefix', async () => {
    const b = await withKeys(['a/1', 'a/2', 'a0', 'b/1', 'c']);
    expect((await page(b, { delimiter: '/', startAfter: 'a/' })).entries.map((e) => e.name)).toEqual(['a0', 'b/', 'c']);
    expect((await page(b, { startAfter: 'a/' })).objects.map((o) => o.key)).toEqual(['a/1', 'a/2', 'a0', 'b/1', 'c']);
    expect((await page(b, { startAfter: 'a/1' })).objects.map((o) => o.key)).toEqual(['a/2', 'a0', 'b/1', 'c']);
    expect((await page(b, { prefix: 'b', startAfter: 'a' })).objects.map((o) => o.key)).toEqual(['b/1']);
    expect((await page(b, { prefix: 'a', startAfter: 'b' })).entries).toEqual([]);
  });

  it('never returns a common prefix at or before startAfter, even when keys under it sort after it', async () => {
    const b = await withKeys(['a/a', 'a/c', 'a/d/e', 'a0', 'b/1', 'c']);
    expect((await page(b, { delimiter: '/', startAfter: 'a/b' })).entries.map((e) => e.name)).toEqual(['a0', 'b/', 'c']);
    expect((await page(b, { delimiter: '/', startAfter: 'a/d/e' })).entries.map((e) => e.name)).toEqual(['a0', 'b/', 'c']);
    expect((await page(b, { prefix: 'a/', delimiter: '/', startAfter: 'a/c' })).entries.map((e) => e.name)).toEqual(['a/d/']);
    expect((await page(b, { prefix: 'a/', delimiter: '/', startAfter: 'a/d/a' })).entries).toEqual([]);
    expect(
      (await page(b, { startAfter: 'a/b' })).objects.map((o) => o.key),
      'without a delimiter: keys after it',
    ).toEqual(['a/c', 'a/d/e', 'a0', 'b/1', 'c']);
  });

  it('orders keys by UTF-8 bytes: astral characters after U+FFFD', async () => {
    const keys = ['\u{1F600}', '\uFFFD', 'z', 'é', 'a', '\u{1F600}/x', '\u{1F600}/y', '\uD7FF/1', '\uE000', '\u{10FFFF}', '\u{10FFFF}\u{10FFFF}'];
    const b = await withKeys(keys);
    expect((await page(b, {})).objects.map((o) => o.key)).toEqual([
      'a',
      'z',
      'é',
      '\uD7FF/1',
      '\uE000',
      '\uFFFD',
      '\u{1F600}',
      '\u{1F600}/x',
      '\u{1F600}/y',
      '\u{10FFFF}',
      '\u{10FFFF}\u{10FFFF}',
    ]);
    expect(await pageThrough(b, { delimiter: '/' }, 2)).toEqual(modelListing(keys, '', '/'));
    expect((await page(b, { prefix: '\u{1F600}', delimiter: '/' })).entries.map((e) => e.name)).toEqual(['\u{1F600}', '\u{1F600}/']);
    expect((await page(b, { prefix: '\uD7FF' })).objects.map((o) => o.key)).toEqual(['\uD7FF/1']);
    expect((await page(b, { prefix: '\u{10FFFF}' })).objects.map((o) => o.key)).toEqual(['\u{10FFFF}', '\u{10FFFF}\u{10FFFF}']);
    expect((await page(b, { startAfter: '\uFFFD', maxKeys: 1 })).objects.map((o) => o.key)).toEqual(['\u{1F600}']);
  });
}
