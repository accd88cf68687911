// Backend over any S3-compatible endpoint (AWS S3, R2's S3 API, B2, MinIO, Garage, s3rver) using
// only PutObject, GetObject (Range), HeadObject, DeleteObject and ListObjectsV2.
// Requests carry minimal headers (Content-Length, x-amz-content-sha256: UNSIGNED-PAYLOAD, the
// SigV4 set) so that strict providers accept them; retry/timeout policy lives in s3-http.ts.
// Range answers are checked, not trusted (s3-range.ts).
// Known gaps: keys with "." or ".." path segments cannot be addressed (URLs normalise them);
// no multipart upload, so a put is limited by the provider's single-PUT size (5 GiB on AWS).

import { S3Http } from './s3-http.ts';
import { rangeAnswer } from './s3-range.ts';
import { parseListObjectsV2 } from './s3-xml.ts';
import {
  PutBodyError,
  assertValidLength,
  type BodyFailure,
  assertValidRange,
  bytesToStream,
  isChunkSource,
  pumpChunks,
  putBodyStream,
  shapeBody,
  withLengthCheck,
} from './streams.ts';
import { createHash } from 'node:crypto';
import type { Backend, BlobInfo, BlobRetention, ByteRange, GetOptions, GetResult, ListOptions, ListPage, PutBody, PutOptions } from './types.ts';

export interface S3BackendOptions {
  id: string;
  domain: string;
  /** e.g. https://s3.eu-west-1.amazonaws.com, https://<account>.r2.cloudflarestorage.com */
  endpoint: string;
  bucket: string;
  /** Signing region; 'auto' for R2, 'us-east-1' for most self-hosted servers. */
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  /** Path-style URLs (endpoint/bucket/key), default true; false for bucket.endpoint/key. */
  pathStyle?: boolean;
  /** Per attempt, default 30 s; see s3-http.ts for what it bounds. */
  timeoutMs?: number;
  /** Extra attempts after 5xx/throttling for replayable requests, default 2. */
  retries?: number;
  /** First backoff step, default 100 ms, doubled per retry, with jitter. */
  retryBaseMs?: number;
  /** Injected fetch (tests count attempts); default globalThis.fetch. */
  fetch?: (request: Request) => Promise<Response>;
  /** The bucket has S3 Object Lock enabled: shards of COMPLIANCE-locked versions get the same retention (retain()). */
  objectLock?: boolean;
}

const encodeSegment = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());

export class S3Backend implements Backend {
  readonly id: string;
  readonly domain: string;
  private readonly http: S3Http;
  private readonly bucketUrl: string;
  readonly retain?: (key: string, retention: BlobRetention) => Promise<void>;

  constructor(o: S3BackendOptions) {
    this.id = o.id;
    this.domain = o.domain;
    if (o.objectLock) this.retain = (key, retention) => this.putRetention(key, retention);
    this.http = new S3Http({
      backendId: o.id,
      accessKeyId: o.accessKeyId,
      secretAccessKey: o.secretAccessKey,
      sessionToken: o.sessionToken,
      region: o.region,
      timeoutMs: o.timeoutMs ?? 30_000,
      retries: o.retries ?? 2,
      retryBaseMs: o.retryBaseMs ?? 100,
      fetch: o.fetch ?? ((req) => fetch(req)),
    });
    const endpoint = new URL(o.endpoint);
    const base = endpoint.pathname.replace(/\/+$/, '');
    if (o.pathStyle === false) endpoint.host = `${o.bucket}.${endpoint.host}`;
    else endpoint.pathname = `${base}/${encodeSegment(o.bucket)}`;
    this.bucketUrl = endpoint.toString().replace(/\/+$/, '');
  }

  async put(key: string, body: PutBody, length: number, opts?: PutOptions): Promise<void> {
    assertValidLength(length);
    const url = this.objectUrl(key);
    if (body instanceof Uint8Array && body.byteLength !== length) {
      throw this.http.error('Corrupt', `body has ${body.byteLength} bytes, declared ${length}`);
    }
    const progress: { touch?: () => void } = {};
    if (isChunkSource(body) && typeof FixedLengthStream === 'function') {
      // No JS stream in between: the source's reused buffers go straight to the runtime.
      const sized = new FixedLengthStream(length);
      let bodyFailure: BodyFailure | null = null;
      const stop = new AbortController();
      const signal = opts?.signal ? AbortSignal.any([opts.signal, stop.signal]) : stop.signal;
      const pumped = pumpChunks(
        body,
        sized.writable,
        length,
        () => progress.touch?.(),
        (e) => stop.abort(e),
      ).catch((e: unknown) => {
        if (e instanceof PutBodyError) bodyFailure = e.failure;
        throw e;
      });
      pumped.catch(() => {});
      try {
        const ex = await this.http.send(
          { method: 'PUT', url, headers: { 'content-length': String(length) }, body: sized.readable, signal, progress },
          (status) => status === 200,
        );
        await ex.res.arrayBuffer().catch(() => {});
        ex.done();
        await pumped;
      } catch (err) {
        // The pump settles as soon as the failed upload stops reading; give it that moment.
        await Promise.race([pumped.catch(() => {}), new Promise((r) => setTimeout(r, 100))]);
        const failure = bodyFailure as BodyFailure | null;
        if (failure?.reason === 'length') throw this.http.error('Corrupt', failure.message, err);
        if (failure?.reason === 'source') throw failure.error; // the caller's source broke, not us
        throw err;
      }
      return;
    }
    const checked = body instanceof Uint8Array ? undefined : withLengthCheck(putBodyStream(body), length, () => progress.touch?.());
    let sendBody: Uint8Array | ReadableStream<Uint8Array> = body instanceof Uint8Array ? body : checked!.stream;
    if (checked) {
      // workerd sends a stream with Content-Length only through a FixedLengthStream.
      sendBody = typeof FixedLengthStream === 'function' ? checked.stream.pipeThrough(new FixedLengthStream(length)) : checked.stream;
    }
    try {
      const ex = await this.http.send(
        { method: 'PUT', url, headers: { 'content-length': String(length) }, body: sendBody, signal: opts?.signal, progress },
        (status) => status === 200,
      );
      await ex.res.arrayBuffer().catch(() => {});
      ex.done();
    } catch (err) {
      const failure = checked?.failure();
      if (failure?.reason === 'length') throw this.http.error('Corrupt', failure.message, err);
      if (failure?.reason === 'source') throw failure.error; // the caller's stream broke, not us
      throw err;
    }
  }

  async get(key: string, range?: ByteRange, opts?: GetOptions): Promise<GetResult> {
    if (range) assertValidRange(range);
    const url = this.objectUrl(key);
    if (range?.length === 0) {
      // "bytes=n-(n-1)" is not a valid Range; a HEAD gives the size to check the offset against.
      const { size } = await this.head(key);
      if (range.offset > size) throw this.pastEnd(range, size);
      return { body: bytesToStream(new Uint8Array(0)), size };
    }
    const headers = range ? { range: `bytes=${range.offset}-${range.offset + range.length - 1}` } : undefined;
    const ex = await this.http.send({ method: 'GET', url, headers, signal: opts?.signal }, (s) => s === 200 || s === 206);
    const shape = rangeAnswer(ex.res, range);
    if (!shape.ok) {
      ex.done();
      await ex.res.body?.cancel().catch(() => {});
      throw this.http.error(shape.kind, shape.message);
    }
    const body = shapeBody(ex.res.body ?? bytesToStream(new Uint8Array(0)), {
      skip: shape.skip,
      take: shape.take,
      mapError: ex.mapError,
      onShort: (n) => this.http.error('Unavailable', `body ended after ${n} of ${shape.take} bytes`),
      onProgress: ex.touch,
      onDone: ex.done,
    });
    return { body, size: shape.size };
  }

  async head(key: string): Promise<BlobInfo> {
    const ex = await this.http.send({ method: 'HEAD', url: this.objectUrl(key) }, (s) => s === 200);
    ex.done();
    const size = Number(ex.res.headers.get('content-length'));
    if (!Number.isSafeInteger(size)) throw this.http.error('Unavailable', 'HEAD answer without Content-Length');
    return { size, lastModified: new Date(ex.res.headers.get('last-modified') ?? NaN) };
  }

  /**
   * PutObjectRetention on the blob, COMPLIANCE mode, after it was written: S3 requires
   * Content-MD5 (or a checksum) on a PUT that sets retention, which a streamed shard cannot
   * give up front; this small document can.
   */
  private async putRetention(key: string, retention: BlobRetention): Promise<void> {
    const body = new TextEncoder().encode(
      `<Retention xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Mode>COMPLIANCE</Mode><RetainUntilDate>${retention.retainUntil.toISOString()}</RetainUntilDate></Retention>`,
    );
    const md5 = createHash('md5').update(body).digest('base64');
    const ex = await this.http.send(
      { method: 'PUT', url: `${this.objectUrl(key)}?retention`, headers: { 'content-length': String(body.byteLength), 'content-md5': md5 }, body },
      (s) => s === 200 || s === 204,
    );
    await ex.res.arrayBuffer().catch(() => {});
    ex.done();
  }

  async delete(key: string): Promise<void> {
    try {
      const ex = await this.http.send({ method: 'DELETE', url: this.objectUrl(key) }, (s) => s === 204 || s === 200);
      await ex.res.arrayBuffer().catch(() => {});
      ex.done();
    } catch (err) {
      if ((err as { kind?: string }).kind !== 'NotFound') throw err; // some servers 404 a missing key
    }
  }

  async list(prefix: string, cursor?: string, opts?: ListOptions): Promise<ListPage> {
    const limit = Math.min(Math.max(opts?.limit ?? 1000, 1), 1000);
    const query: [string, string][] = [
      ['list-type', '2'],
      ['prefix', prefix],
      ['max-keys', String(limit)],
      ['encoding-type', 'url'],
    ];
    if (cursor !== undefined) query.push(['continuation-token', cursor]);
    const url = `${this.bucketUrl}?${query.map(([k, v]) => `${k}=${encodeSegment(v)}`).join('&')}`;
    const ex = await this.http.send({ method: 'GET', url }, (s) => s === 200);
    let xml: string;
    try {
      xml = await ex.res.text();
    } catch (err) {
      throw ex.mapError(err);
    } finally {
      ex.done();
    }
    let page: ReturnType<typeof parseListObjectsV2>;
    try {
      page = parseListObjectsV2(xml);
    } catch (err) {
      throw this.http.error('Unavailable', `unreadable ListObjectsV2 answer: ${(err as Error).message}`, err);
    }
    if (page.isTruncated && !page.nextContinuationToken) {
      throw this.http.error('Unavailable', 'truncated ListObjectsV2 answer without NextContinuationToken');
    }
    return { entries: page.entries, cursor: page.isTruncated ? page.nextContinuationToken : undefined };
  }

  private objectUrl(key: string): string {
    const segments = key.split('/');
    if (key === '' || segments.some((s) => s === '.' || s === '..')) {
      throw new RangeError(`S3 backend cannot address key ${JSON.stringify(key)}`);
    }
    return `${this.bucketUrl}/${segments.map(encodeSegment).join('/')}`;
  }

  private pastEnd(range: ByteRange, size: number) {
    return this.http.error('Corrupt', `range ${range.offset}+${range.length} is past the end of ${size} bytes`);
  }
}
