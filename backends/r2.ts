// Backend over a Workers R2 binding (R2Bucket from @cloudflare/workers-types).
// Streams are put through a FixedLengthStream (R2 rejects a stream of unknown length). Outside
// workerd (the miniflare proxy in Node tests) there is no FixedLengthStream and a proxied stream
// has no length either, so the body is buffered there: a test path, never the Worker's.
// Binding failures are Errors whose message ends in an R2 error code, e.g.
// "get: The requested range is not satisfiable (10039)"; the code picks the kind.
// Known gaps: a binding call cannot be aborted or timed out (signals are checked up front only);
// the R2 code table below covers the codes seen in miniflare and Cloudflare's R2 error docs.

import {
  BackendError,
  type Backend,
  type BackendErrorKind,
  type BlobInfo,
  type ByteRange,
  type GetOptions,
  type GetResult,
  type ListOptions,
  type ListPage,
  type PutBody,
  type PutOptions,
} from './types.ts';
import {
  PutBodyError,
  assertValidLength,
  assertValidRange,
  bytesToStream,
  isChunkSource,
  pumpChunks,
  putBodyStream,
  putWithPump,
  readAll,
  shapeBody,
  withLengthCheck,
} from './streams.ts';

export interface R2BackendOptions {
  id: string;
  domain: string;
  bucket: R2Bucket;
}

/** R2 error code -> kind; anything else is Unavailable. */
const R2_CODE_KINDS: Record<number, BackendErrorKind> = {
  10007: 'NotFound', // NoSuchKey
  10031: 'PreconditionFailed',
  10039: 'Corrupt', // InvalidRange: the range is past the end of the blob
  10058: 'Throttled', // TooManyRequests
};

export class R2Backend implements Backend {
  readonly id: string;
  readonly domain: string;
  private readonly bucket: R2Bucket;

  constructor(o: R2BackendOptions) {
    this.id = o.id;
    this.domain = o.domain;
    this.bucket = o.bucket;
  }

  async put(key: string, body: PutBody, length: number, opts?: PutOptions): Promise<void> {
    assertValidLength(length);
    opts?.signal?.throwIfAborted();
    if (body instanceof Uint8Array) {
      if (body.byteLength !== length) throw this.error('Corrupt', `body has ${body.byteLength} bytes, declared ${length}`);
      await this.call('put', () => this.bucket.put(key, body));
      return;
    }
    if (isChunkSource(body) && typeof FixedLengthStream === 'function') {
      // No JS stream in between: the source's reused buffers go straight to the runtime.
      const sized = new FixedLengthStream(length);
      try {
        await putWithPump(this.bucket.put(key, sized.readable), pumpChunks(body, sized.writable, length));
      } catch (err) {
        if (err instanceof PutBodyError) {
          if (err.failure.reason === 'length') throw this.error('Corrupt', err.failure.message, err);
          throw err.failure.error; // the caller's source broke, not R2
        }
        throw this.mapError('put', err);
      }
      return;
    }
    const checked = withLengthCheck(putBodyStream(body), length);
    try {
      if (typeof FixedLengthStream === 'function') {
        const sized = new FixedLengthStream(length);
        // A failed pipe surfaces through put() (and checked.failure()), so only await it here.
        const pumped = checked.stream.pipeTo(sized.writable).catch(() => {});
        await Promise.all([this.bucket.put(key, sized.readable), pumped]);
      } else {
        await this.bucket.put(key, await readAll(checked.stream));
      }
    } catch (err) {
      const failure = checked.failure();
      if (failure?.reason === 'length') throw this.error('Corrupt', failure.message, err);
      if (failure?.reason === 'source') throw failure.error; // the caller's stream broke, not R2
      throw this.mapError('put', err);
    }
  }

  async get(key: string, range?: ByteRange, opts?: GetOptions): Promise<GetResult> {
    if (range) assertValidRange(range);
    opts?.signal?.throwIfAborted();
    if (range?.length === 0) {
      // R2 rejects a zero-length range; the size alone answers it.
      const { size } = await this.head(key);
      if (range.offset > size) throw this.pastEnd(range, size);
      return { body: bytesToStream(new Uint8Array(0)), size };
    }
    const object = await this.call('get', () => this.bucket.get(key, range ? { range } : undefined));
    if (object === null) throw this.error('NotFound', `no blob at ${JSON.stringify(key)}`);
    const size = object.size;
    if (range && range.offset + range.length > size) {
      await object.body.cancel().catch(() => {}); // R2 clamps a range that runs past the end
      throw this.pastEnd(range, size);
    }
    const take = range?.length ?? size;
    const body = shapeBody(object.body as ReadableStream<Uint8Array>, {
      take,
      mapError: (err) => this.mapError('get body', err),
      onShort: (n) => this.error('Unavailable', `body ended after ${n} of ${take} bytes`),
    });
    return { body, size };
  }

  async head(key: string): Promise<BlobInfo> {
    const object = await this.call('head', () => this.bucket.head(key));
    if (object === null) throw this.error('NotFound', `no blob at ${JSON.stringify(key)}`);
    return { size: object.size, lastModified: object.uploaded };
  }

  async delete(key: string): Promise<void> {
    await this.call('delete', () => this.bucket.delete(key));
  }

  async list(prefix: string, cursor?: string, opts?: ListOptions): Promise<ListPage> {
    const limit = Math.min(Math.max(opts?.limit ?? 1000, 1), 1000);
    const page = await this.call('list', () => this.bucket.list({ prefix, cursor, limit }));
    const entries = page.objects.map((o) => ({ key: o.key, size: o.size, lastModified: o.uploaded }));
    return { entries, cursor: page.truncated ? page.cursor : undefined };
  }

  private async call<T>(op: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw this.mapError(op, err);
    }
  }

  private mapError(op: string, err: unknown): BackendError {
    if (err instanceof BackendError) return err;
    const message = err instanceof Error ? err.message : String(err);
    const code = Number(/\((\d{5,6})\)\s*$/.exec(message)?.[1]);
    return this.error(R2_CODE_KINDS[code] ?? 'Unavailable', `${op}: ${message}`, err);
  }

  private pastEnd(range: ByteRange, size: number): BackendError {
    return this.error('Corrupt', `range ${range.offset}+${range.length} is past the end of ${size} bytes`);
  }

  private error(kind: BackendErrorKind, message: string, cause?: unknown): BackendError {
    return new BackendError(this.id, kind, message, cause === undefined ? undefined : { cause });
  }
}
