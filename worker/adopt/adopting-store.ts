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
}

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

export class Adoption {
  readonly tombstones: Tombstones;
  readonly notFound: NotFoundCache;
  private readonly flights = new Map<string, Flight>();
  /** Adoptions committed by this isolate (tests and logs). */
  adopted = 0;
  private readonly breakers = new Map<SourceClient, SourceBreaker>();

  constructor(
    private readonly inner: T.ObjectStore,
    private readonly o: AdoptionOptions,
  ) {
    this.tombstones = new Tombstones(inner);
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
      putObject: (b, k, body, opts) => (this.o.sources.has(b) ? this.refuseReserved(k) : undefined, this.inner.putObject(b, k, body, opts)),
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

  private refuseReserved(key: string): void {
    if (isReserved(key)) throw new S3Error('AccessDenied', 'keys under .shardgate-adopt/ are reserved in a bucket with a source');
  }

  /** The source of `bucket` when a read of `key` may fall through to it. */
  private sourceFor(bucket: string, o: { versionId?: string }): SourceClient | undefined {
    return o.versionId === undefined ? this.o.sources.get(bucket) : undefined;
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
    const source = this.sourceFor(bucket, opts);
    if (!source) return this.inner.headObject(bucket, key, opts);
    if (isReserved(key)) throw new S3Error('NoSuchKey', undefined, { Key: key });
    const held = await this.own(() => this.inner.headObject(bucket, key, opts));
    if (held) return held;
    if (!(await this.askSource(bucket, key))) throw new S3Error('NoSuchKey', undefined, { Key: key });
    const answer = await this.unreachable(source, () => source.head(key, forwardedHeaders(opts), opts.partNumber));
    if (answer.status === 404) this.notFound.add(bucket, key);
    return headOf(key, answer.status, answer.headers, opts.partNumber);
  }

  async getObject(bucket: string, key: string, opts: T.GetObjectOptions): Promise<T.ObjectBody> {
    const source = this.sourceFor(bucket, opts);
    if (!source) return this.inner.getObject(bucket, key, opts);
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
  ): Promise<void> {
    // Asked while the body flows; a source that says it has no tags (x-amz-tagging-count absent on AWS means none, but not every server sends it) is not asked.
    const tags =
      count === '0'
        ? null
        : source.tags(key).catch((err) => {
            this.o.log?.({ msg: 'adopted without its tags', bucket, key, error: err instanceof Error ? err.message : String(err) });
            return [];
          });
    const result = await this.inner.putObject(bucket, key, body, {
      contentLength: head.size,
      metadata: head.metadata,
      checksum: null,
      conditions: { ifNoneMatch: '*' },
      adopted: { etag: head.etag, lastModified: head.lastModified },
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
    throw new Error('deleted through shardgate while it was adopted');
  }

  async deleteObject(bucket: string, key: string, opts?: T.DeleteObjectOptions): Promise<T.DeleteObjectResult> {
    if (!this.o.sources.has(bucket)) return this.inner.deleteObject(bucket, key, opts);
    this.refuseReserved(key);
    if (opts?.versionId !== undefined) return this.inner.deleteObject(bucket, key, opts);
    const conditional = opts?.conditions && Object.values(opts.conditions).some((v) => v !== undefined);
    // Tombstone first, then the catalog: at no moment may the source show the key again.
    if (!conditional) await this.tombstones.record(bucket, key);
    const result = await this.inner.deleteObject(bucket, key, opts);
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
    const results = [
      ...(await this.inner.deleteObjects(
        bucket,
        entries.filter((e) => !isReserved(e.key)),
        opts,
      )),
      ...refused,
    ];
    for (const r of results) {
      if (r.error || isReserved(r.key) || entries.some((e) => e.key === r.key && e.versionId !== undefined)) continue;
      await this.tombstones.record(bucket, r.key);
      this.notFound.forget(bucket, r.key);
    }
    return results;
  }

  listObjects(bucket: string, opts: T.ListObjectsOptions): Promise<T.ListObjectsResult> {
    const source = this.o.sources.get(bucket);
    return source ? this.unreachable(source, () => mergedListing(this.inner, source, this.tombstones, bucket, opts)) : this.inner.listObjects(bucket, opts);
  }

  /** GetObjectAttributes of an object only the source holds: its head from a source HEAD; its parts are not known (null). */
  async headObjectParts(
    bucket: string,
    key: string,
    conditions: T.ReadConditions,
    sse?: T.GetObjectOptions['sse'],
    versionId?: string,
  ): Promise<{ head: T.ObjectInfo; parts: T.ObjectPart[] | null }> {
    const source = this.sourceFor(bucket, { ...(versionId === undefined ? {} : { versionId }) });
    const own = () => this.inner.headObjectParts(bucket, key, conditions, sse, versionId);
    if (!source) return own();
    const held = await this.own(own);
    if (held) return held;
    const { range: _range, ...head } = await this.headObject(bucket, key, { conditions, ...(sse ? { sse } : {}) });
    return { head, parts: null };
  }

  /** The catalog's versions, tombstones left out (source objects have no versions here). */
  async listObjectVersions(bucket: string, opts: T.ListVersionsOptions): Promise<T.ListVersionsResult> {
    const page = await this.inner.listObjectVersions(bucket, opts);
    if (!this.o.sources.has(bucket)) return page;
    return { ...page, versions: page.versions.filter((v) => !isReserved(v.key)), commonPrefixes: page.commonPrefixes.filter((p) => !isReserved(p)) };
  }
}
