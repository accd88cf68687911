/**
 * The listing algorithm shared by stores that hold keys in memory: prefix, any-string delimiter,
 * resume point, one max-keys budget shared by keys and common prefixes.
 * Spec: S3 ListObjectsV2 / ListObjects / ListMultipartUploads. Keys sort in UTF-8 byte order
 * (= code point order, which differs from JS string order above U+FFFF).
 * Resume rule: when the resume point lies in a common prefix of this listing (it is the prefix,
 * or a key under it), every key under that prefix is skipped: the prefix sorts at or before the
 * resume point, so it was returned already (a page boundary never repeats a prefix) or the
 * client asked to start after it (StartAfter `a/b` with keys under `a/`: S3 returns no `a/`).
 */
import type { ListObjectsOptions } from './object-store.ts';

/** Compares two keys in UTF-8 byte order. */
export function compareKeys(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    // Surrogates (D800-DFFF) encode code points above every BMP unit: move them above E000-FFFF.
    if (x >= 0xd800) x += x < 0xe000 ? 0x2000 : -0x800;
    if (y >= 0xd800) y += y < 0xe000 ? 0x2000 : -0x800;
    return x - y;
  }
  return a.length - b.length;
}

/** The common prefix `key` rolls up into, or null when it is listed as itself. */
export function commonPrefixOf(key: string, prefix: string, delimiter: string | null): string | null {
  if (!delimiter || !key.startsWith(prefix)) return null;
  const at = key.indexOf(delimiter, prefix.length);
  return at < 0 ? null : key.slice(0, at + delimiter.length);
}

export type ListEntry<T> = { kind: 'key'; key: string; value: T } | { kind: 'prefix'; prefix: string };

export interface ListPage<T> {
  entries: ListEntry<T>[];
  isTruncated: boolean;
  lastEntry: string | null;
}

/** Lists `sorted` (ascending by compareKeys) as one page. */
export function listPage<T>(sorted: Iterable<[string, T]>, options: ListObjectsOptions): ListPage<T> {
  const { prefix, delimiter, startAfter, maxKeys } = options;
  const entries: ListEntry<T>[] = [];
  if (maxKeys <= 0) return { entries, isTruncated: false, lastEntry: null };
  const skipUnder = startAfter === null ? null : commonPrefixOf(startAfter, prefix, delimiter);
  let lastPrefix: string | null = null;
  let lastEntry: string | null = null;
  for (const [key, value] of sorted) {
    if (!key.startsWith(prefix)) {
      if (compareKeys(key, prefix) > 0) break;
      continue;
    }
    if (startAfter !== null && compareKeys(key, startAfter) <= 0) continue;
    if (skipUnder !== null && key.startsWith(skipUnder)) continue;
    const cp = commonPrefixOf(key, prefix, delimiter);
    if (cp !== null && cp === lastPrefix) continue;
    if (entries.length === maxKeys) return { entries, isTruncated: true, lastEntry };
    if (cp !== null) {
      entries.push({ kind: 'prefix', prefix: cp });
      lastPrefix = lastEntry = cp;
    } else {
      entries.push({ kind: 'key', key, value });
      lastEntry = key;
    }
  }
  return { entries, isTruncated: false, lastEntry };
}
