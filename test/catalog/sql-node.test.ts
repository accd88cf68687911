// The catalog contract against the product's one SQL catalog run in Node (CatalogObject over
// SQLite in wasm: test/support/local-catalog.ts), plus the range lister that CatalogObject pages
// SQLite with, held to the store's in-memory listPage on random key sets.

import { describe, expect, it } from 'vitest';
import { localCatalog } from '../support/local-catalog.ts';
import { afterKey, keySuccessor, listRanges, sortedRowsFetch, startBound } from '../../worker/catalog/range-list.ts';
import { compareKeys, listPage } from '../../worker/model/listing.ts';
import { prng } from '../support/random.ts';
import { runCatalogContract } from './contract.ts';
import { byUtf8, manifest } from './fixtures.ts';

runCatalogContract('sql in node', (options) => localCatalog(options));

describe('a catalog object called by a gateway deployed before conditional deletes', () => {
  it('takes its If-Match string as a condition, never as none', async () => {
    const catalog = localCatalog();
    await catalog.insertBucket('older', 'auto');
    const m = manifest('older', 'k');
    await catalog.commitManifest('older', 'k', m, {});
    const stub = catalog.namespace.get(catalog.namespace.idFromName('bucket:older'));
    const refused = await stub.removeManifest('older', 'k', '"another"', 0);
    expect(refused.error?.code).toBe('PreconditionFailed');
    expect(await catalog.getManifest('older', 'k')).toEqual(m);
    expect((await stub.removeManifest('older', 'k', m.etag, 0)).error).toBeUndefined();
    expect(await catalog.getManifest('older', 'k')).toBeNull();
  });
});

describe('keySuccessor', () => {
  it('is the least string above every string with the prefix', () => {
    expect(keySuccessor('a/')).toBe('a0');
    expect(keySuccessor('\uD7FF')).toBe('\uE000'); // skips the surrogate range
    expect(keySuccessor('\uFFFF')).toBe('\u{10000}');
    expect(keySuccessor('a\u{10FFFF}')).toBe('b');
    expect(keySuccessor('\u{10FFFF}')).toBeNull();
    expect(keySuccessor('')).toBeNull();
  });
});

describe('listRanges against listPage', () => {
  const alphabet = ['a', 'b', '/', '-', 'é', '\uFFFD', '\u{1F600}'];
  const next = prng(7); // deterministic, so a failure reproduces
  const rand = (n: number) => (next() * n) | 0;
  const word = (max: number) => Array.from({ length: 1 + rand(max) }, () => alphabet[rand(alphabet.length)]).join('');

  it('gives the same pages on random keys, prefixes, delimiters and resume points', () => {
    const seen = { truncated: 0, prefixes: 0, resumedAtPrefix: 0 };
    for (let round = 0; round < 300; round++) {
      const keys = [...new Set(Array.from({ length: rand(30) }, () => word(6)))].sort(byUtf8);
      const rows = keys.map((key) => ({ key }));
      const prefix = rand(3) === 0 ? '' : word(2);
      const delimiter = [null, '/', '-/', '\u{1F600}'][rand(4)];
      let startAfter = rand(2) === 0 ? null : rand(2) === 0 && keys.length ? keys[rand(keys.length)].slice(0, 1 + rand(3)) : word(3);
      const maxKeys = rand(6);
      for (let pages = 0; pages < 40; pages++) {
        const opts = { prefix, delimiter, startAfter, maxKeys };
        const want = listPage(
          rows.map((r) => [r.key, r] as [string, { key: string }]),
          opts,
        );
        const got = listRanges(sortedRowsFetch(rows), afterKey, { prefix, delimiter, start: startBound(prefix, delimiter, startAfter), maxEntries: maxKeys });
        expect(got, JSON.stringify(opts)).toEqual(want);
        seen.truncated += Number(want.isTruncated);
        seen.prefixes += Number(want.entries.some((e) => e.kind === 'prefix'));
        if (!want.isTruncated) break;
        seen.resumedAtPrefix += Number(want.entries.at(-1)!.kind === 'prefix');
        startAfter = want.lastEntry; // page on, as a client would
      }
    }
    // The random cases must reach the interesting paths, or the comparison proves little.
    expect(seen.truncated).toBeGreaterThan(30);
    expect(seen.prefixes).toBeGreaterThan(30);
    expect(seen.resumedAtPrefix).toBeGreaterThan(10);
  });

  it('agrees with compareKeys on the order it assumes', () => {
    const keys = ['\u{1F600}', '\uFFFD', 'z', 'é', '\uE000', '\uD7FF'];
    expect([...keys].sort(byUtf8)).toEqual([...keys].sort(compareKeys));
  });
});
