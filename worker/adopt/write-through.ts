/**
 * Write-through of an adopted bucket (issue 41, docs/ADOPTION.md "Write-through"): with
 * `sources.<bucket>.writeThrough` on, every write a client makes through shardgate (PUT,
 * CompleteMultipartUpload, CopyObject, DELETE, DeleteObjects) is also made in the source, so the
 * old path keeps working during a gradual cut-over. Off (the default), the source is never written.
 * How, and why so:
 * - shardgate's write is the write: it commits (and answers the client) as in any bucket; a source
 *   that is down or slow never fails or slows a client's write.
 * - Before the write and again right after its commit (adopting-store.ts written()), a **retry
 *   record** is written: an empty-ish object under the reserved prefix `.shardgate-adopt/pending/`
 *   naming the key (one small inline commit, in the key's own catalog partition, as a tombstone
 *   is). It says "the source's copy of this key may be stale"; the first survives a kill after the
 *   commit, the second a sync that took the first away before the commit.
 * - Then, in the background (the request's waitUntil), the key is **synced**: the key's current
 *   state is read from the catalog and made the source's: the object's bytes streamed from the
 *   shards into one source PUT (with its Content-Type, stored headers and user metadata), or a
 *   source DELETE when the key holds nothing now. Never buffered: the source PUT reads the shards
 *   at the source's pace. State, not operations: two quick writes of a key cost at most two syncs,
 *   and the last one leaves the source with the current object whatever order they end in (each
 *   sync checks, after its source write, that the key's current version is still the one it sent,
 *   and sends again when not).
 * - The record is deleted only after a successful sync, conditionally on its own ETag (its body
 *   is random bytes), so a write that came meanwhile keeps its record. A sync that fails (the
 *   source down, refusing, slow) leaves the record: the cron syncs every bucket's records again
 *   (`syncPending`), and the status page and metrics show how many wait and since when (the lag).
 * Not written through: an SSE-C object (its key is the client's, not kept), tags, ACLs, retention.
 * A multipart object goes to the source as one PUT (its source ETag is then the MD5 of its bytes,
 * not the "-N" one; an object over the source's single-PUT limit, 5 GiB on AWS, fails and stays
 * pending). Once the source is detached nothing is written through (records are dropped).
 */
import { S3Error } from '../model/errors.ts';
import type * as T from '../model/object-store.ts';
import { keep } from '../model/lent-chunks.ts';
import { RESERVED_PREFIX } from '../model/reserved-keys.ts';
import type { SourceClient } from './source-client.ts';

export const PENDING_PREFIX = `${RESERVED_PREFIX}pending/`;
export const pendingKey = (key: string) => PENDING_PREFIX + key;

/** The stored headers a source PUT carries (what a GET of the object answers besides the body). */
export function sourcePutHeaders(m: T.ObjectMetadata): Record<string, string> {
  const h: Record<string, string> = {};
  if (m.contentType !== undefined) h['content-type'] = m.contentType;
  if (m.contentEncoding !== undefined) h['content-encoding'] = m.contentEncoding;
  if (m.contentDisposition !== undefined) h['content-disposition'] = m.contentDisposition;
  if (m.contentLanguage !== undefined) h['content-language'] = m.contentLanguage;
  if (m.cacheControl !== undefined) h['cache-control'] = m.cacheControl;
  if (m.expires !== undefined) h.expires = m.expires;
  for (const [name, value] of Object.entries(m.user)) h[`x-amz-meta-${name}`] = value;
  return h;
}

/**
 * The store's lent chunks (model/lent-chunks.ts) as a fetch body may hold them: the request body of
 * a fetch may be read ahead of its sending, so each chunk is copied (one chunk at a time in flight).
 */
function kept(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) return controller.close();
        controller.enqueue(keep(value, 'write-through'));
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
}

/** How a key's sync ended: the source now matches, the record is gone ('synced'); or it is still pending. */
export type SyncOutcome = 'synced' | 'pending' | 'none';

/** A bucket's write-through lag: records waiting, and the oldest's time (ms; null: none). */
export interface WriteThroughLag {
  pending: number;
  /** More than `pending` may wait (only one listing page is counted). */
  more: boolean;
  oldestAt: number | null;
}

export interface WriteThroughOptions {
  /** The engine's store (no read-through). */
  inner: T.ObjectStore;
  sources: ReadonlyMap<string, SourceClient>;
  /** Buckets whose source is written through. */
  buckets: ReadonlySet<string>;
  /** Whether the bucket's source is detached (never written again). */
  detached: (bucket: string) => Promise<boolean>;
  /**
   * Whether a client deleted the key through shardgate (its tombstone, tombstones.ts). A key that
   * holds nothing here and was never deleted here is the source's still (not yet adopted; a write
   * of it that failed left only its record): the source's object stays.
   */
  deleted: (bucket: string, key: string) => Promise<boolean>;
  log?: (fields: Record<string, unknown>) => void;
  /** Syncs of one key that find it changed under them before giving up until the next retry. */
  maxRounds?: number;
}

export class WriteThrough {
  /** Key -> its sync in this isolate: one at a time per key (a second waits, then runs). */
  private readonly running = new Map<string, Promise<SyncOutcome>>();
  /** Source writes made (tests count them with the source's own counters too). */
  synced = 0;
  failed = 0;

  constructor(private readonly o: WriteThroughOptions) {}

  on(bucket: string): boolean {
    return this.o.buckets.has(bucket) && this.o.sources.has(bucket);
  }

  /**
   * The retry record of a write that committed. Written before the response: a gateway killed
   * right after still has it, and the cron syncs it.
   */
  async mark(bucket: string, key: string): Promise<void> {
    const token = crypto.getRandomValues(new Uint8Array(16));
    await this.o.inner.putObject(bucket, pendingKey(key), new Blob([token]).stream(), {
      contentLength: token.byteLength,
      metadata: { user: {} },
      checksum: null,
      conditions: {},
    });
  }

  /** Syncs `key` now (waiting for a sync of it already running in this isolate, then running its own). */
  sync(bucket: string, key: string): Promise<SyncOutcome> {
    const id = `${bucket}/${key}`;
    const before = this.running.get(id) ?? Promise.resolve<SyncOutcome>('none');
    const mine = before.catch(() => 'pending' as const).then(() => this.syncOnce(bucket, key));
    this.running.set(id, mine);
    void mine.finally(() => {
      if (this.running.get(id) === mine) this.running.delete(id);
    });
    return mine;
  }

  private async syncOnce(bucket: string, key: string): Promise<SyncOutcome> {
    const source = this.o.sources.get(bucket);
    const record = await this.own(() => this.o.inner.headObject(bucket, pendingKey(key), { conditions: {} }));
    if (!record || !source) return 'none';
    try {
      if (!(await this.o.detached(bucket))) {
        let sent: string | null | undefined;
        for (let round = 0; ; round++) {
          const now = await this.currentVersion(bucket, key);
          if (now === sent) break; // what the source holds is the key's current state
          if (round >= (this.o.maxRounds ?? 4)) throw new Error('the key kept changing while it was written through');
          sent = await this.send(source, bucket, key);
        }
      }
      // The record goes only when no write came since it was read (its ETag is its random body's).
      await this.o.inner
        .deleteObject(bucket, pendingKey(key), { conditions: { ifMatch: record.etag, lastModifiedTime: record.lastModified.getTime() } })
        .catch((err) => {
          if (!(err instanceof S3Error)) throw err; // a write meanwhile: its own record stays, its own sync runs
        });
      this.synced++;
      return 'synced';
    } catch (err) {
      this.failed++;
      this.o.log?.({ msg: 'write-through pending', bucket, key, error: err instanceof Error ? err.message : String(err) });
      return 'pending';
    }
  }

  /** The key's current version as an identity (ETag and date), or null when it holds nothing. */
  private async currentVersion(bucket: string, key: string): Promise<string | null> {
    const head = await this.own(() => this.o.inner.headObject(bucket, key, { conditions: {} }));
    return head ? `${head.etag} ${head.lastModified.getTime()} ${head.versionId ?? ''}` : null;
  }

  /** Makes the source's copy of `key` its current state; answers the version it sent (null: deleted). */
  private async send(source: SourceClient, bucket: string, key: string): Promise<string | null> {
    let object: T.ObjectBody | null;
    try {
      object = await this.own(() => this.o.inner.getObject(bucket, key, { conditions: {} }));
    } catch (err) {
      if (err instanceof S3Error && err.code === 'MethodNotAllowed')
        object = null; // a delete marker is current
      else throw err;
    }
    if (!object) {
      if (await this.o.deleted(bucket, key)) await source.delete(key);
      return null;
    }
    if (object.metadata.sse?.kind === 'c') {
      // Its key was the client's and is not kept: there are no bytes to send (docs/ADOPTION.md).
      await object.body.cancel().catch(() => {});
      this.o.log?.({ msg: 'write-through skipped an SSE-C object', bucket, key });
      return `${object.etag} ${object.lastModified.getTime()} ${object.versionId ?? ''}`;
    }
    const id = `${object.etag} ${object.lastModified.getTime()} ${object.versionId ?? ''}`;
    try {
      await source.put(key, kept(object.body), object.size, sourcePutHeaders(object.metadata));
    } catch (err) {
      await object.body.cancel().catch(() => {});
      throw err;
    }
    return id;
  }

  /**
   * The cron's retry: each record of each written-through bucket synced again, up to `max` keys
   * in all (oldest keys first is not known: key order). Answers how many synced and how many stay.
   */
  async syncPending(max: number): Promise<{ synced: number; pending: number }> {
    let synced = 0;
    let pending = 0;
    for (const bucket of [...this.o.buckets].sort()) {
      if (!this.on(bucket)) continue;
      let after: string | null = null;
      for (;;) {
        if (synced + pending >= max) return { synced, pending };
        const page = await this.o.inner.listObjects(bucket, {
          prefix: PENDING_PREFIX,
          delimiter: null,
          startAfter: after,
          maxKeys: Math.min(100, max - synced - pending),
        });
        for (const o of page.objects) {
          const outcome = await this.sync(bucket, o.key.slice(PENDING_PREFIX.length));
          if (outcome === 'pending') pending++;
          else synced++;
        }
        if (!page.isTruncated || !page.objects.length) break;
        after = page.objects[page.objects.length - 1]!.key;
      }
    }
    return { synced, pending };
  }

  /** The bucket's lag: its records waiting (one listing page of 1000 counted) and the oldest's date. */
  async lag(bucket: string): Promise<WriteThroughLag> {
    const page = await this.o.inner.listObjects(bucket, { prefix: PENDING_PREFIX, delimiter: null, startAfter: null, maxKeys: 1000 });
    let oldest: number | null = null;
    for (const o of page.objects) oldest = oldest === null ? o.lastModified.getTime() : Math.min(oldest, o.lastModified.getTime());
    return { pending: page.objects.length, more: page.isTruncated, oldestAt: oldest };
  }

  private async own<R>(read: () => Promise<R>): Promise<R | null> {
    try {
      return await read();
    } catch (err) {
      if (err instanceof S3Error && err.code === 'NoSuchKey') return null;
      throw err;
    }
  }
}
