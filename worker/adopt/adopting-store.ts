/**
 * The object store of a gateway whose buckets may have a source (issue 41, docs/ADOPTION.md):
 * the engine's store with read-through, adopt on read and "writes win" layered on, for the
 * buckets the config gives a source; every other bucket and verb goes straight through.
 * - GET/HEAD of a key the catalog does not hold and no tombstone hides answer from the source
 *   as the source answers (source-object.ts); a 404 is remembered briefly (NotFoundCache).
 * - A full GET (no range, part or condition) of such a key streams to the client while the same
 *   bytes go through the ordinary put path, with the source's ETag and Last-Modified
 *   (PutObjectOptions.adopted); the commit only happens when the key is still absent, so a write
 *   made meanwhile wins. Concurrent full GETs of the key share that one source read: the others
 *   wait for the adoption and read the shards (single flight, per isolate). A ranged, part or
 *   conditional GET reads through and schedules a background adoption under the same flight.
 * - A source that does not answer is 503 SlowDown, behind a breaker (breaker.ts).
 * - DELETE writes a tombstone (tombstones.ts) before it removes what the catalog holds, so the
 *   source never shows the key again; PUT needs nothing (the catalog's object wins).
 * - ListObjects merges both sides (merged-listing.ts).
 */
import { BackendError } from '../../backends/types.ts';
import { S3Error } from '../model/errors.ts';
import { lend } from '../model/lent-chunks.ts';
import type * as T from '../model/object-store.ts';
import { SourceBreaker } from './breaker.ts';
import { mergedListing } from './merged-listing.ts';
import { pairedStreams } from './paired-streams.ts';
import type { SourceClient } from './source-client.ts';
import { forwardedHeaders, headOf } from './source-object.ts';
import { Tombstones, isReserved } from './tombstones.ts';
import { WriteThrough } from './write-through.ts';

export interface AdoptionOptions {
  /** Bucket -> its source. */
  sources: ReadonlyMap<string, SourceClient>;
  /**
   * Runs an adoption's write as work of its own, kept alive past the response (the request's
   * waitUntil) and holding none of the request's budget: it may end after the response does.
   */
  detach: (work: () => Promise<void>) => Promise<void>;
  /** How long a read waits for another request's adoption of its key before reading the source itself (ms; default 10 s). */
  flightWaitMs?: number;
  /** How long a source 404 is believed (ms), and how many are remembered per isolate. */
  notFoundMs?: number;
  notFoundEntries?: number;
  now?: () => number;
  log?: (fields: Record<string, unknown>) => void;
  /**
   * The buckets' backfill records (model/adopt-backfill.ts): a source detached there is never read
   * again. Read at most once per `detachedMs` (default 5 s) per bucket and isolate; absent: never
   * detached.
   */
  states?: { getAdoptState(bucket: string): Promise<string | null> };
  detachedMs?: number;
  /**
   * The buckets whose source is written through (config `sources.<bucket>.writeThrough`,
   * write-through.ts): their clients' writes also go to the source. Absent: none (never written).
   */
  writeThroughBuckets?: ReadonlySet<string>;
}

/** How one backfilled object ended (backfill.ts counts them). */
export type BackfillOutcome = 'adopted' | 'readopted' | 'held' | 'deleted' | 'changed';

/** What an adoption came to: 'adopted' (the shards hold it), 'missing' (the source has no such key), 'dropped'. */
type Flight = Promise<'adopted' | 'missing' | 'dropped'>;

/** Source 404s by bucket and key, each believed for `ttl` ms; the oldest forgotten past `max`. */
export class NotFoundCache {
  private readonly seen = new Map<string, number>();
  constructor(
    private readonly ttl: number,
    private readonly max: number,
    private readonly now: () => number,
  ) {}
  has(bucket: string, key: string): boolean {
    const id = `${bucket}/${key}`;
    const until = this.seen.get(id);
    if (until === undefined) return false;
    if (until > this.now()) return true;
    this.seen.delete(id);
    return false;
  }
  add(bucket: string, key: string): void {
    const id = `${bucket}/${key}`;
    this.seen.delete(id);
    this.seen.set(id, this.now() + this.ttl);
    while (this.seen.size > this.max) this.seen.delete(this.seen.keys().next().value!);
  }
  forget(bucket: string, key: string): void {
    this.seen.delete(`${bucket}/${key}`);
  }
}

const DELETED_MEANWHILE = 'deleted through shardgate while it was adopted';

/** A detached source, as the merged listing sees it: empty. */
const NO_SOURCE = {
  list: async () => ({ objects: [], commonPrefixes: [], isTruncated: false, nextContinuationToken: null }),
} as unknown as SourceClient;

export class Adoption {
  readonly tombstones: Tombstones;
  readonly notFound: NotFoundCache;
  readonly writeThrough: WriteThrough;
  private readonly flights = new Map<string, Flight>();
  /** Adoptions committed by this isolate (tests and logs). */
  adopted = 0;
  private readonly breakers = new Map<SourceClient, SourceBreaker>();
  /** Bucket -> whether its source is detached, and until when that answer is believed (ms). */
  private readonly detached = new Map<string, { value: boolean; until: number }>();

  constructor(
    private readonly inner: T.ObjectStore,
    private readonly o: AdoptionOptions,
  ) {
    this.tombstones = new Tombstones(inner);
    this.writeThrough = new WriteThrough({
      inner,
      sources: o.sources,
      buckets: o.writeThroughBuckets ?? new Set(),
      detached: (bucket) => this.isDetached(bucket),
      deleted: (bucket, key) => this.tombstones.has(bucket, key),
      ...(o.log ? { log: o.log } : {}),
    });
    this.notFound = new NotFoundCache(o.notFoundMs ?? 5000, o.notFoundEntries ?? 4096, o.now ?? Date.now);
  }

  /**
   * A call to `source` as a client's read needs it. A source that does not answer (down, slow past
   * its timeout, refusing our credentials) is 503 SlowDown, never a 404 for an object that may
   * exist nor wrong bytes (issue 41); after several such failures in a row its breaker answers
   * that at once for a while (breaker.ts). Objects already adopted never reach here.
   */
  private async unreachable<R>(source: SourceClient, call: () => Promise<R>): Promise<R> {
    let breaker = this.breakers.get(source);
    if (!breaker) this.breakers.set(source, (breaker = new SourceBreaker(this.o.now ?? Date.now)));
    if (!breaker.allow()) throw new S3Error('SlowDown', 'The source bucket is not answering; retry later.');
    try {
      const result = await call();
      breaker.succeeded();
      return result;
    } catch (err) {
      if (!(err instanceof BackendError)) {
        breaker.succeeded(); // not the source failing to answer (a trial must end either way)
        throw err;
      }
      breaker.failed();
      throw new S3Error('SlowDown', `The source bucket did not answer (${err.kind}); retry later.`, {}, { cause: err });
    }
  }

  /** The store clients see: the inner one with the adoption verbs in place of its own. */
  store(): T.ObjectStore {
    const own: Partial<T.ObjectStore> = {
      getObject: (b, k, opts) => this.getObject(b, k, opts),
      headObject: (b, k, opts) => this.headObject(b, k, opts),
      putObject: (b, k, body, opts) => {
        if (this.o.sources.has(b)) this.refuseReserved(k);
        return this.written(b, [k], () => this.inner.putObject(b, k, body, opts));
      },
      copyObject: (src, b, k, opts) => {
        if (this.o.sources.has(b)) this.refuseReserved(k);
        return this.written(b, [k], () => this.inner.copyObject(src, b, k, opts));
      },
      completeMultipartUpload: (b, k, id, parts, opts) => {
        if (this.o.sources.has(b)) this.refuseReserved(k);
        return this.written(b, [k], () => this.inner.completeMultipartUpload(b, k, id, parts, opts));
      },
      deleteObject: (b, k, opts) => this.deleteObject(b, k, opts),
      deleteObjects: (b, entries, opts) => this.deleteObjects(b, entries, opts),
      listObjects: (b, opts) => this.listObjects(b, opts),
      listObjectVersions: (b, opts) => this.listObjectVersions(b, opts),
      headObjectParts: (b, k, c, sse, v) => this.headObjectParts(b, k, c, sse, v),
    };
    const inner = this.inner;
    return new Proxy(inner, {
      get(target, prop) {
        if (prop in own) return own[prop as keyof T.ObjectStore];
        const value = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  }

  /**
   * A client's write that committed, written through to the source when the bucket says so
   * (write-through.ts): its retry record before the answer, the source write in the background.
   */
  private async written<R>(bucket: string, keys: string[], write: () => Promise<R>): Promise<R> {
    const through = await this.writesThrough(bucket);
    // Marked before the write as well as after: a gateway killed between the commit and the
    // answer still leaves the record (the cron syncs it); a write that then fails leaves one
    // whose sync finds the source's copy current. The second mark covers a sync that ran
    // meanwhile and took the first away before this write committed.
    if (through) for (const key of keys) await this.writeThrough.mark(bucket, key);
    const result = await write();
    if (through) await this.writtenThrough(bucket, keys);
    return result;
  }

  private async writesThrough(bucket: string): Promise<boolean> {
    return this.writeThrough.on(bucket) && !(await this.isDetached(bucket));
  }

  private async writtenThrough(bucket: string, keys: string[]): Promise<void> {
    if (!keys.length || !(await this.writesThrough(bucket))) return;
    for (const key of keys) await this.writeThrough.mark(bucket, key);
    void this.o.detach(async () => {
      for (const key of keys) await this.writeThrough.sync(bucket, key);
    });
  }

  private refuseReserved(key: string): void {
    if (isReserved(key)) throw new S3Error('AccessDenied', 'keys under .shardgate-adopt/ are reserved in a bucket with a source');
  }

  /** The source of `bucket` when a read of `key` may fall through to it: none for a version, nor once detached. */
  private async sourceFor(bucket: string, o: { versionId?: string }): Promise<SourceClient | undefined> {
    const source = o.versionId === undefined ? this.o.sources.get(bucket) : undefined;
    return source && !(await this.isDetached(bucket)) ? source : undefined;
  }

  /** Whether `bucket`'s source was detached (its backfill record says so), as read at most `detachedMs` ago. */
  async isDetached(bucket: string): Promise<boolean> {
    if (!this.o.states) return false;
    const now = (this.o.now ?? Date.now)();
    const known = this.detached.get(bucket);
    if (known && known.until > now) return known.value;
    const row = await this.o.states.getAdoptState(bucket);
    const value = row !== null && (JSON.parse(row) as { detachedAt?: number | null }).detachedAt != null;
    this.detached.set(bucket, { value, until: now + (this.o.detachedMs ?? 5000) });
    return value;
  }

  /** Told by the isolate that detached (or re-attached) the source: believed at once here. */
  noteDetached(bucket: string, value: boolean): void {
    this.detached.set(bucket, { value, until: (this.o.now ?? Date.now)() + (this.o.detachedMs ?? 5000) });
  }

  /** The catalog's answer, or null when it holds no current object of the key (NoSuchKey). */
  private async own<R>(read: () => Promise<R>): Promise<R | null> {
    try {
      return await read();
    } catch (err) {
      if (err instanceof S3Error && err.code === 'NoSuchKey') return null;
      throw err;
    }
  }

  /** Whether the source may be asked for `key`: not reserved, not tombstoned, no fresh 404 remembered. */
  private async askSource(bucket: string, key: string): Promise<boolean> {
    if (isReserved(key) || this.notFound.has(bucket, key)) return false;
    return !(await this.tombstones.has(bucket, key));
  }

  async headObject(bucket: string, key: string, opts: T.GetObjectOptions): Promise<T.ObjectHead> {
    const source = await this.sourceFor(bucket, opts);
    if (!source) return this.hideReserved(bucket, key, () => this.inner.headObject(bucket, key, opts));
    if (isReserved(key)) throw new S3Error('NoSuchKey', undefined, { Key: key });
    const held = await this.own(() => this.inner.headObject(bucket, key, opts));
    if (held) return held;
    if (!(await this.askSource(bucket, key))) throw new S3Error('NoSuchKey', undefined, { Key: key });
    const answer = await this.unreachable(source, () => source.head(key, forwardedHeaders(opts), opts.partNumber));
    if (answer.status === 404) this.notFound.add(bucket, key);
    const head = headOf(key, answer.status, answer.headers, opts.partNumber);
    // GetObjectTagging of an object only the source holds: the source's tags (one more source
    // request, only for that call; none when its HEAD says it has none).
    if (!opts.tags || answer.headers.get('x-amz-tagging-count') === '0') return head;
    const tags = await this.unreachable(source, () => source.tags(key));
    return tags.length ? { ...head, metadata: { ...head.metadata, tags } } : head;
  }

  async getObject(bucket: string, key: string, opts: T.GetObjectOptions): Promise<T.ObjectBody> {
    const source = await this.sourceFor(bucket, opts);
    if (!source) return this.hideReserved(bucket, key, () => this.inner.getObject(bucket, key, opts));
    if (isReserved(key)) throw new S3Error('NoSuchKey', undefined, { Key: key });
    const held = await this.own(() => this.inner.getObject(bucket, key, opts));
    if (held) return held;
    const full = !opts.range && !opts.partNumber && !opts.sse && Object.values(opts.conditions).every((v) => v === undefined);
    const id = `${bucket}/${key}`;
    const flight = full ? this.flights.get(id) : undefined;
    if (flight) {
      // Another request of this isolate is reading the key from the source: wait for its adoption,
      // which goes at its client's pace; past `flightWaitMs`, read the source alone (no adoption).
      let timer: ReturnType<typeof setTimeout> | undefined;
      const outcome = await Promise.race([
        flight,
        new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), this.o.flightWaitMs ?? 10_000))),
      ]);
      clearTimeout(timer);
      if (outcome === 'late') {
        if (!(await this.askSource(bucket, key))) throw new S3Error('NoSuchKey', undefined, { Key: key });
        return this.readThrough(source, bucket, key, opts);
      }
      if (outcome === 'missing') throw new S3Error('NoSuchKey', undefined, { Key: key });
      if (outcome === 'adopted') {
        const adopted = await this.own(() => this.inner.getObject(bucket, key, opts));
        if (adopted) return adopted;
      }
    }
    if (!(await this.askSource(bucket, key))) throw new S3Error('NoSuchKey', undefined, { Key: key });
    if (!full) {
      const read = await this.readThrough(source, bucket, key, opts);
      // A range, a part or a condition read from the source: the object is adopted in the background.
      if (!opts.sse) this.scheduleAdoption(source, bucket, key);
      return read;
    }
    const land = this.openFlight(id);
    if (!land) return this.getObject(bucket, key, opts); // lost a race to open the flight
    try {
      return await this.adoptOnRead(source, bucket, key, land);
    } catch (err) {
      land(err instanceof S3Error && err.code === 'NoSuchKey' ? 'missing' : 'dropped');
      throw err;
    }
  }

  /** A read of a bucket with a source but none to ask (a version, a detached source): tombstones are still never shown. */
  private hideReserved<R>(bucket: string, key: string, read: () => Promise<R>): Promise<R> {
    if (this.o.sources.has(bucket) && isReserved(key)) return Promise.reject(new S3Error('NoSuchKey', undefined, { Key: key }));
    return read();
  }

  /** Opens the key's flight (null when one is open): the function that tells how it ended. */
  private openFlight(id: string): ((outcome: Awaited<Flight>) => void) | null {
    if (this.flights.has(id)) return null;
    let settle!: (outcome: Awaited<Flight>) => void;
    const mine: Flight = new Promise((resolve) => (settle = resolve));
    this.flights.set(id, mine);
    return (outcome) => {
      if (this.flights.get(id) === mine) this.flights.delete(id);
      settle(outcome);
    };
  }

  /**
   * The adoption of a key read in part: one source read of its own, in the background, unless a
   * flight of the key is open (its own adoption, or a full GET's).
   */
  private scheduleAdoption(source: SourceClient, bucket: string, key: string): void {
    const land = this.openFlight(`${bucket}/${key}`);
    if (!land) return;
    void this.o.detach(async () => {
      try {
        const answer = await source.get(key, {}, null);
        if (answer.status === 404) this.notFound.add(bucket, key);
        if (answer.status !== 200 || !answer.body) {
          await answer.body?.cancel().catch(() => {});
          return land(answer.status === 404 ? 'missing' : 'dropped');
        }
        await this.write(bucket, key, headOf(key, answer.status, answer.headers), answer.body, source, answer.headers.get('x-amz-tagging-count'));
        land('adopted');
      } catch (err) {
        this.o.log?.({ msg: 'adoption dropped', bucket, key, error: err instanceof Error ? err.message : String(err) });
        land('dropped');
      }
    });
  }

  /**
   * The backfill's adoption of one listed source object (backfill.ts), under the key's single
   * flight, so a client's miss and the backfill never read one key twice in an isolate: a key
   * whose flight is open is being adopted by a client's read ('held'). `replacing`: the ETag of
   * the adopted version the source's object changed from (a re-adoption, committed only while that
   * version is current: a client's write meanwhile wins); null: a first adoption (committed only
   * while the key is absent). The source is asked for the listed ETag (If-Match), so the bytes
   * adopted are the object listed, never a mix: a change since the listing is 'changed' (the next
   * pass sees it). `seen` is told the body's bytes as they come (egress) and the GetObjectTagging
   * the adoption asks (a GET-class request; skipped when the source says it has no tags). A
   * source that does not answer throws a BackendError; a refused write is 'held' (a client's
   * write won) or 'deleted'.
   */
  async backfillOne(
    bucket: string,
    entry: { key: string; etag: string },
    replacing: string | null,
    seen: { bytes: (n: number) => void; tagging: () => void; heads?: (n: number) => void },
  ): Promise<BackfillOutcome> {
    const source = this.o.sources.get(bucket);
    if (!source) throw new Error(`bucket ${bucket} has no source`);
    const key = entry.key;
    const land = this.openFlight(`${bucket}/${key}`);
    if (!land) return 'held';
    let outcome: Awaited<Flight> = 'dropped';
    try {
      // Looked at again under the flight: a client's read may have adopted it, or a client written
      // or deleted it, since the page was listed (a source read saved).
      if (await this.tombstones.has(bucket, key)) return 'deleted';
      const now = await this.own(() => this.inner.headObject(bucket, key, { conditions: {} }));
      if (now && (replacing === null || now.etag !== replacing || !now.metadata.adopted)) {
        outcome = 'adopted';
        return 'held';
      }
      if (!now && replacing !== null) return 'deleted'; // removed through shardgate meanwhile
      const answer = await source.get(key, { 'if-match': entry.etag }, null);
      // A source that ignores If-Match (s3rver does) is held to the listed ETag by its answer's.
      const other = answer.status === 200 && (answer.headers.get('etag') ?? '').replace(/"/g, '') !== entry.etag.replace(/"/g, '');
      if (other || answer.status !== 200 || !answer.body) {
        if (other) {
          await answer.body?.cancel().catch(() => {});
          return 'changed';
        }
        await answer.body?.cancel().catch(() => {});
        if (answer.status === 404) this.notFound.add(bucket, key);
        if (answer.status === 404 || answer.status === 412) {
          if (answer.status === 404) outcome = 'missing';
          return 'changed';
        }
        throw new Error(`the source answered ${answer.status} to a GET`);
      }
      // The body as the write reads it, its bytes counted; ours to cancel whatever the write did with it.
      const reader = answer.body.getReader();
      const counted = new ReadableStream<Uint8Array>(
        {
          async pull(controller) {
            const { done, value } = await reader.read();
            if (done) return controller.close();
            seen.bytes(value.byteLength);
            controller.enqueue(value);
          },
          cancel: (reason) => reader.cancel(reason),
        },
        { highWaterMark: 0 },
      );
      try {
        await this.write(
          bucket,
          key,
          headOf(key, answer.status, answer.headers),
          counted,
          source,
          answer.headers.get('x-amz-tagging-count'),
          replacing === null ? { ifNoneMatch: '*' } : { ifMatch: replacing },
          seen.tagging,
          seen.heads,
        );
      } catch (err) {
        await reader.cancel().catch(() => {});
        if (err instanceof S3Error && (err.code === 'PreconditionFailed' || err.code === 'NoSuchKey')) return 'held';
        if (err instanceof Error && err.message === DELETED_MEANWHILE) return 'deleted';
        throw err;
      }
      outcome = 'adopted';
      return replacing === null ? 'adopted' : 'readopted';
    } finally {
      land(outcome);
    }
  }

  /**
   * The adoption's write: the ordinary put path with the source's ETag and date, committed only
   * while the key is absent (a write made through shardgate meanwhile wins), and undone when a
   * delete came meanwhile.
   */
  private async write(
    bucket: string,
    key: string,
    head: T.ObjectHead,
    body: ReadableStream<Uint8Array>,
    source: SourceClient,
    count: string | null,
    conditions: T.WriteConditions = { ifNoneMatch: '*' },
    askedTags?: () => void,
    askedParts?: (heads: number) => void,
  ): Promise<void> {
    // Asked while the body flows; a source that says it has no tags (x-amz-tagging-count absent on AWS means none, but not every server sends it) is not asked.
    if (count !== '0') askedTags?.();
    const tags =
      count === '0'
        ? null
        : source.tags(key).catch((err) => {
            this.o.log?.({ msg: 'adopted without its tags', bucket, key, error: err instanceof Error ? err.message : String(err) });
            return [];
          });
    // A multipart object keeps its source's part boundaries (partNumber reads, ObjectParts): its
    // parts' sizes asked first (one HEAD per part); not known, it is stored as one part (logged).
    const partsCount = Number(/-(\d+)"?$/.exec(head.etag)?.[1] ?? 0);
    if (partsCount > 1) askedParts?.(partsCount);
    const parts = partsCount > 1 ? await source.partSizes(key, head.etag, head.size).catch(() => null) : undefined;
    if (parts === null) this.o.log?.({ msg: 'adopted without its part boundaries', bucket, key, etag: head.etag });
    const result = await this.inner.putObject(bucket, key, body, {
      contentLength: head.size,
      metadata: head.metadata,
      checksum: null,
      conditions,
      adopted: { etag: head.etag, lastModified: head.lastModified, ...(parts ? { parts } : {}) },
    });
    await this.undoIfDeleted(bucket, key, result);
    // The source's tags, set on the adopted version (not in the same commit: a read in between sees none).
    if (tags) {
      const set = await tags;
      if (set.length) await this.inner.putObjectTagging(bucket, key, set, result.versionId);
    }
    this.adopted++;
    this.o.log?.({ msg: 'adopted', bucket, key, size: head.size, etag: head.etag });
  }

  /** A read answered by the source, nothing adopted (a range, a part, a condition, an SSE-C key). */
  private async readThrough(source: SourceClient, bucket: string, key: string, opts: T.GetObjectOptions): Promise<T.ObjectBody> {
    const answer = await this.unreachable(source, () => source.get(key, forwardedHeaders(opts), opts.partNumber));
    if (answer.status === 404) this.notFound.add(bucket, key);
    const head = headOf(key, answer.status, answer.headers, opts.partNumber);
    return { ...head, body: lend(answer.body ?? new Blob([]).stream(), `source ${bucket}/${key}`) };
  }

  /**
   * The first full GET of a key only the source holds: the client's body and the adoption's
   * write read one source stream (paired-streams.ts). `land` is told how it ended.
   */
  private async adoptOnRead(
    source: SourceClient,
    bucket: string,
    key: string,
    land: (outcome: 'adopted' | 'missing' | 'dropped') => void,
  ): Promise<T.ObjectBody> {
    const answer = await this.unreachable(source, () => source.get(key, {}, null));
    if (answer.status === 404) this.notFound.add(bucket, key);
    const head = headOf(key, answer.status, answer.headers);
    if (!answer.body || answer.status !== 200) {
      land('dropped');
      return { ...head, body: lend(answer.body ?? new Blob([]).stream(), `source ${bucket}/${key}`) };
    }
    const [client, adoption, dropAdoption] = pairedStreams(answer.body);
    void this.o.detach(() =>
      this.write(bucket, key, head, adoption, source, answer.headers.get('x-amz-tagging-count'))
        .then(() => land('adopted'))
        .catch(async (err) => {
          // Refused before or while reading (a write that won, a quota): the client must not wait on it.
          await dropAdoption(err);
          this.o.log?.({ msg: 'adoption dropped', bucket, key, error: err instanceof Error ? err.message : String(err) });
          land('dropped');
        }),
    );
    return { ...head, body: lend(client, `source ${bucket}/${key}`) };
  }

  /**
   * A DELETE that came while the adoption was being written has left a tombstone: the adopted
   * version it may have missed is removed now (only that version: its date is the source's).
   */
  private async undoIfDeleted(bucket: string, key: string, result: T.PutObjectResult): Promise<void> {
    if (!(await this.tombstones.has(bucket, key))) return;
    await this.inner
      .deleteObject(bucket, key, {
        conditions: { ifMatch: result.etag, lastModifiedTime: result.lastModified.getTime() },
        ...(result.versionId ? { versionId: result.versionId } : {}),
      })
      .catch(() => {});
    throw new Error(DELETED_MEANWHILE);
  }

  async deleteObject(bucket: string, key: string, opts?: T.DeleteObjectOptions): Promise<T.DeleteObjectResult> {
    if (!this.o.sources.has(bucket)) return this.inner.deleteObject(bucket, key, opts);
    this.refuseReserved(key);
    // Once the source is detached (never read again): no tombstone needed.
    if (await this.isDetached(bucket)) return this.inner.deleteObject(bucket, key, opts);
    // A version's delete: the tombstone only once it deleted something (a version id naming
    // nothing must not hide the source's object), so the key does not come back from the source
    // when that was its last version (the adopted one, say).
    const conditional = opts?.versionId !== undefined || (opts?.conditions && Object.values(opts.conditions).some((v) => v !== undefined));
    // Tombstone first, then the catalog: at no moment may the source show the key again.
    if (!conditional) await this.tombstones.record(bucket, key);
    const result = await this.written(bucket, [key], () => this.inner.deleteObject(bucket, key, opts));
    if (conditional) await this.tombstones.record(bucket, key);
    this.notFound.forget(bucket, key);
    return result;
  }

  async deleteObjects(
    bucket: string,
    entries: T.DeleteObjectsRequestEntry[],
    opts?: { bypassGovernance?: boolean; refused?: (key: string, versionId?: string) => boolean },
  ): Promise<T.DeleteObjectsEntry[]> {
    if (!this.o.sources.has(bucket)) return this.inner.deleteObjects(bucket, entries, opts);
    // After the deletes (an entry refused, by policy or its conditions, must leave the source's
    // object visible): a read between the two may still see the source (docs/ADOPTION.md).
    // A tombstone is not a client's to delete (its key would come back from the source).
    const refused = entries
      .filter((e) => isReserved(e.key))
      .map(
        (e): T.DeleteObjectsEntry => ({
          key: e.key,
          ...(e.versionId === undefined ? {} : { versionId: e.versionId }),
          error: { code: 'AccessDenied', message: 'Access Denied' },
        }),
      );
    const allowed = entries.filter((e) => !isReserved(e.key));
    // Marked first (a kill after the deletes still leaves the records: written()); the records of
    // keys whose delete was refused are synced to the source's unchanged state and dropped.
    const through = await this.writesThrough(bucket);
    if (through) for (const key of new Set(allowed.map((e) => e.key))) await this.writeThrough.mark(bucket, key);
    const results = [...(await this.inner.deleteObjects(bucket, allowed, opts)), ...refused];
    if (await this.isDetached(bucket)) return results; // the source is never read again: no tombstones
    for (const r of results) {
      // A version's delete too (the key must not come back when that was its last version), once it deleted something.
      if (r.error || isReserved(r.key)) continue;
      await this.tombstones.record(bucket, r.key);
      this.notFound.forget(bucket, r.key);
    }
    if (through) await this.writtenThrough(bucket, [...new Set(allowed.map((e) => e.key))]);
    return results;
  }

  async listObjects(bucket: string, opts: T.ListObjectsOptions): Promise<T.ListObjectsResult> {
    const source = this.o.sources.get(bucket);
    if (!source) return this.inner.listObjects(bucket, opts);
    // Detached: the catalog's listing alone, tombstones still hidden (a source that lists nothing).
    if (await this.isDetached(bucket)) return mergedListing(this.inner, NO_SOURCE, this.tombstones, bucket, opts);
    return this.unreachable(source, () => mergedListing(this.inner, source, this.tombstones, bucket, opts));
  }

  /**
   * GetObjectAttributes of an object only the source holds: its head from a source HEAD; a
   * multipart object's parts from one source HEAD per part (`partNumber`), null when the source
   * does not answer parts.
   */
  async headObjectParts(
    bucket: string,
    key: string,
    conditions: T.ReadConditions,
    sse?: T.GetObjectOptions['sse'],
    versionId?: string,
  ): Promise<{ head: T.ObjectInfo; parts: T.ObjectPart[] | null }> {
    const source = await this.sourceFor(bucket, { ...(versionId === undefined ? {} : { versionId }) });
    const own = () => this.inner.headObjectParts(bucket, key, conditions, sse, versionId);
    if (!source) return this.hideReserved(bucket, key, own);
    const held = await this.own(own);
    if (held) return held;
    const { range: _range, ...head } = await this.headObject(bucket, key, { conditions, ...(sse ? { sse } : {}) });
    // A multipart object's parts as the source answers them (one HEAD per part); else none known.
    const sizes = /-\d+"?$/.test(head.etag) ? await this.unreachable(source, () => source.partSizes(key, head.etag, head.size)) : null;
    if (!sizes) return { head, parts: null };
    return { head: { ...head, partsCount: sizes.length }, parts: sizes.map((size, i) => ({ partNumber: i + 1, size, checksum: null })) };
  }

  /** The catalog's versions, tombstones left out (source objects have no versions here). */
  async listObjectVersions(bucket: string, opts: T.ListVersionsOptions): Promise<T.ListVersionsResult> {
    const page = await this.inner.listObjectVersions(bucket, opts);
    if (!this.o.sources.has(bucket)) return page;
    return { ...page, versions: page.versions.filter((v) => !isReserved(v.key)), commonPrefixes: page.commonPrefixes.filter((p) => !isReserved(p)) };
  }
}
