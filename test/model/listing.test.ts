/** The listing algorithm: UTF-8 order, prefix/delimiter grouping, paging that never repeats. */
import { describe, expect, it } from 'vitest';
import { commonPrefixOf, compareKeys, listPage, type ListPage } from '../../worker/model/listing.ts';

const utf8Order = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

describe('compareKeys', () => {
  it('orders like UTF-8 bytes, also across surrogate pairs', () => {
    const keys = ['\u{1F600}', '\uFF61', '\uE000', '\uD7FF', 'a', '', 'ab', '\u00e9', '\u{10000}', 'a\u{1F600}', 'a\uFFFF'];
    expect([...keys].sort(compareKeys)).toEqual([...keys].sort(utf8Order));
  });
});

describe('commonPrefixOf', () => {
  it('rolls up at the first delimiter after the prefix', () => {
    expect(commonPrefixOf('a/b/c', '', '/')).toBe('a/');
    expect(commonPrefixOf('a/b/c', 'a/', '/')).toBe('a/b/');
    expect(commonPrefixOf('a/b', 'a/b', '/')).toBeNull();
    expect(commonPrefixOf('x--y--z', 'x', '--')).toBe('x--');
    expect(commonPrefixOf('a/b', '', null)).toBeNull();
  });
});

function allEntries(keys: string[], prefix: string, delimiter: string | null, maxKeys: number): { entries: string[]; pages: number } {
  const sorted = [...keys].sort(compareKeys).map((k) => [k, k] as [string, string]);
  const entries: string[] = [];
  let startAfter: string | null = null;
  let pages = 0;
  for (;;) {
    const page: ListPage<string> = listPage(sorted, { prefix, delimiter, startAfter, maxKeys });
    pages++;
    expect(page.entries.length).toBeLessThanOrEqual(maxKeys);
    entries.push(...page.entries.map((e) => (e.kind === 'key' ? e.key : e.prefix)));
    if (!page.isTruncated) return { entries, pages };
    startAfter = page.lastEntry;
    if (pages > 1000) throw new Error('paging does not end');
  }
}

describe('listPage', () => {
  const keys = ['a', 'a/', 'a/1', 'a/2/x', 'a/2/y', 'a/3', 'a0', 'b//c', 'b/c', 'c-d-e', 'c-d-f', 'c-e', 'é/1', '\u{1F600}/x', 'z'];

  it('groups keys into common prefixes that share the max-keys budget', () => {
    const sorted = [...keys].sort(compareKeys).map((k) => [k, k] as [string, string]);
    const page = listPage(sorted, { prefix: '', delimiter: '/', startAfter: null, maxKeys: 1000 });
    expect(page.entries.map((e) => (e.kind === 'key' ? e.key : `P:${e.prefix}`))).toEqual([
      'a',
      'P:a/',
      'a0',
      'P:b/',
      'c-d-e',
      'c-d-f',
      'c-e',
      'z',
      'P:é/',
      'P:\u{1F600}/',
    ]);
    expect(listPage(sorted, { prefix: '', delimiter: '/', startAfter: null, maxKeys: 0 })).toEqual({ entries: [], isTruncated: false, lastEntry: null });
  });

  it.each([
    ['', null],
    ['', '/'],
    ['a', '/'],
    ['a/', '/'],
    ['', '-'],
    ['c', '-d-'],
    ['', '//'],
    ['b/', '/'],
  ] as [string, string | null][])('paging with prefix %j and delimiter %j returns every entry exactly once', (prefix, delimiter) => {
    const full = allEntries(keys, prefix, delimiter, 1000).entries;
    for (const maxKeys of [1, 2, 3, 5]) {
      const paged = allEntries(keys, prefix, delimiter, maxKeys);
      expect(paged.entries).toEqual(full);
      expect(new Set(paged.entries).size).toBe(paged.entries.length);
    }
  });

  it('resuming after a common prefix skips every key under it', () => {
    const sorted = [...keys].sort(compareKeys).map((k) => [k, k] as [string, string]);
    const page = listPage(sorted, { prefix: '', delimiter: '/', startAfter: 'a/', maxKeys: 2 });
    expect(page.entries.map((e) => (e.kind === 'key' ? e.key : e.prefix))).toEqual(['a0', 'b/']);
  });
});
