/**
 * ListObjects (v1 and v2: the S3 handlers turn markers, continuation tokens and encoding-type
 * into the store's prefix/delimiter/startAfter/maxKeys, and tokens name keys only) of a bucket
 * with a source: the source's listing merged with the catalog's, in UTF-8 key order, one
 * max-keys budget shared by keys and common prefixes (model/listing.ts rules). An entry the
 * catalog holds wins over the source's of the same name; a source key with a tombstone is
 * hidden, and so is a source common prefix all of whose keys are tombstoned; the reserved
 * tombstone keys are never shown.
 * Both sides are read page by page as the merge needs them: memory is a page per side.
 */
import { commonPrefixOf, compareKeys } from '../model/listing.ts';
import type { ListObjectsOptions, ListObjectsResult, ObjectStore, ObjectSummary } from '../model/object-store.ts';
import type { SourceClient } from './source-client.ts';
import { RESERVED_PREFIX } from '../model/reserved-keys.ts';
import { isReserved, type Tombstones } from './tombstones.ts';

type Entry = { name: string; object?: ObjectSummary };

const pageSize = (maxKeys: number) => Math.min(1000, Math.max(maxKeys + 1, 100));

/** Entries in order from pages fetched on demand. */
class Cursor {
  private buffer: Entry[] = [];
  private at = 0;
  private exhausted = false;
  constructor(private readonly fetchPage: () => Promise<{ entries: Entry[]; more: boolean }>) {}

  async peek(): Promise<Entry | null> {
    while (this.at === this.buffer.length && !this.exhausted) {
      const page = await this.fetchPage();
      this.buffer = page.entries;
      this.at = 0;
      this.exhausted = !page.more;
    }
    return this.at < this.buffer.length ? this.buffer[this.at]! : null;
  }

  take(): void {
    this.at++;
  }
}

const sorted = (objects: ObjectSummary[], prefixes: string[]): Entry[] =>
  [...objects.map((o) => ({ name: o.key, object: o })), ...prefixes.map((p) => ({ name: p }))].sort((a, b) => compareKeys(a.name, b.name));

function catalogCursor(store: ObjectStore, bucket: string, o: ListObjectsOptions): Cursor {
  let after = o.startAfter;
  return new Cursor(async () => {
    const page = await store.listObjects(bucket, { ...o, startAfter: after, maxKeys: pageSize(o.maxKeys) });
    after = page.lastEntry;
    return { entries: sorted(page.objects, page.commonPrefixes), more: page.isTruncated && page.lastEntry !== null };
  });
}

function sourceCursor(source: SourceClient, o: ListObjectsOptions, prefix = o.prefix, delimiter = o.delimiter): Cursor {
  let token: string | null = null;
  return new Cursor(async () => {
    const page = await source.list({ prefix, delimiter, startAfter: o.startAfter, continuationToken: token, maxKeys: pageSize(o.maxKeys) });
    token = page.nextContinuationToken;
    const objects = page.objects.map(
      (e): ObjectSummary => ({
        key: e.key,
        size: e.size,
        etag: e.etag,
        lastModified: e.lastModified,
        checksum: null,
        ...(e.storageClass ? { storageClass: e.storageClass } : {}),
      }),
    );
    return { entries: sorted(objects, page.commonPrefixes), more: page.isTruncated && token !== null };
  });
}

function tombstoneCursor(tombs: Tombstones, bucket: string, prefix: string, startAfter: string | null, limit: number): Cursor {
  let after = startAfter;
  return new Cursor(async () => {
    const page = await tombs.page(bucket, prefix, after, limit);
    after = page.keys.at(-1) ?? after;
    return { entries: page.keys.map((name) => ({ name })), more: page.more };
  });
}

export async function mergedListing(
  store: ObjectStore,
  source: SourceClient,
  tombs: Tombstones,
  bucket: string,
  o: ListObjectsOptions,
): Promise<ListObjectsResult> {
  const result: ListObjectsResult = { objects: [], commonPrefixes: [], isTruncated: false, lastEntry: null };
  if (o.maxKeys <= 0) return result;
  const skipUnder = o.startAfter === null ? null : commonPrefixOf(o.startAfter, o.prefix, o.delimiter);
  const cat = catalogCursor(store, bucket, o);
  const src = sourceCursor(source, o);
  const tomb = tombstoneCursor(tombs, bucket, o.prefix, o.startAfter, pageSize(o.maxKeys));

  /** Whether `name` (a key) has a tombstone; tombstones before it are passed. */
  const tombstoned = async (name: string): Promise<boolean> => {
    for (let t = await tomb.peek(); t && compareKeys(t.name, name) < 0; t = await tomb.peek()) tomb.take();
    return (await tomb.peek())?.name === name;
  };
  /** A source common prefix is shown when one of its source keys has no tombstone. */
  const sourcePrefixLive = async (p: string): Promise<boolean> => {
    for (let t = await tomb.peek(); t && compareKeys(t.name, p) < 0; t = await tomb.peek()) tomb.take();
    const first = await tomb.peek();
    if (!first?.name.startsWith(p)) return true;
    const keys = sourceCursor(source, { ...o, startAfter: null }, p, null);
    const under = tombstoneCursor(tombs, bucket, p, null, 1000);
    for (let k = await keys.peek(); k; keys.take(), k = await keys.peek()) {
      let t = await under.peek();
      while (t && compareKeys(t.name, k.name) < 0) {
        under.take();
        t = await under.peek();
      }
      if (t?.name !== k.name) return true;
    }
    return false;
  };

  for (;;) {
    const c = await cat.peek();
    const s = await src.peek();
    if (!c && !s) break;
    const order = !c ? 1 : !s ? -1 : compareKeys(c.name, s.name);
    let entry: Entry | null = null;
    if (order <= 0) {
      cat.take();
      entry = (await catalogShows(store, bucket, c!)) ? c : null;
    }
    if (order > 0 || (order === 0 && !entry)) {
      src.take();
      const name = s!.name;
      const before = o.startAfter !== null && (compareKeys(name, o.startAfter) <= 0 || (skipUnder !== null && name.startsWith(skipUnder)));
      if (before) entry = null;
      else if (s!.object) entry = (await tombstoned(name)) ? null : s;
      else entry = (await sourcePrefixLive(name)) ? s : null;
    } else if (order === 0) src.take();
    if (!entry) continue;
    if (result.objects.length + result.commonPrefixes.length === o.maxKeys) {
      result.isTruncated = true;
      break;
    }
    if (entry.object) result.objects.push(entry.object);
    else result.commonPrefixes.push(entry.name);
    result.lastEntry = entry.name;
  }
  return result;
}

/** A catalog entry is shown unless it is a tombstone, or a common prefix that holds only tombstones. */
async function catalogShows(store: ObjectStore, bucket: string, e: Entry): Promise<boolean> {
  if (isReserved(e.name)) return false;
  if (e.object || !RESERVED_PREFIX.startsWith(e.name)) return true;
  // Roll every reserved key into one prefix: anything else under `e.name` is a client's.
  const probe = await store.listObjects(bucket, { prefix: e.name, delimiter: RESERVED_PREFIX.slice(e.name.length), startAfter: null, maxKeys: 2 });
  return probe.objects.length > 0 || probe.commonPrefixes.some((p) => p !== RESERVED_PREFIX);
}
