/**
 * The source bucket of an adopted bucket (issue 41, docs/ADOPTION.md): the S3-compatible bucket
 * the data lives in before shardgate holds it. Signed as the S3 backend signs
 * (backends/s3-http.ts: aws4fetch, per-attempt timeout bounding "no progress"): GET with the
 * client's Range and conditional headers forwarded, HEAD, GetObjectTagging, one ListObjectsV2
 * page, and, for write-through only (write-through.ts), PUT of a streamed body and DELETE. Without
 * write-through the source is never written.
 * A GET/HEAD answer is handed back as it came (status and headers), so the read-through answers
 * exactly as the source would; a 404 is an answer, not an error. Other failures are BackendErrors
 * (the error map answers 503).
 */
import { S3Http } from '../../backends/s3-http.ts';
import { blocks, leafText } from '../../backends/s3-xml.ts';

export interface SourceSettings {
  endpoint: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Path-style URLs (endpoint/bucket/key), default true. */
  pathStyle?: boolean;
  /** Per attempt and between body chunks (ms). */
  timeoutMs: number;
  fetch?: (request: Request) => Promise<Response>;
}

/** A GET or HEAD as the source answered it; `release` ends the exchange (called for you once the body ends). */
export interface SourceAnswer {
  status: number;
  headers: Headers;
  /** The body, with the source's timeout kept armed while it flows; null for HEAD and bodiless answers. */
  body: ReadableStream<Uint8Array> | null;
  release(): void;
}

export interface SourceListEntry {
  key: string;
  size: number;
  etag: string;
  lastModified: Date;
  storageClass?: string;
}

export interface SourceListPage {
  objects: SourceListEntry[];
  commonPrefixes: string[];
  isTruncated: boolean;
  nextContinuationToken: string | null;
}

export interface SourceListRequest {
  prefix: string;
  delimiter: string | null;
  startAfter: string | null;
  continuationToken: string | null;
  maxKeys: number;
}

const encodeSegment = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

export class SourceClient {
  private readonly http: S3Http;
  private readonly bucketUrl: string;
  /** Source requests sent, by verb (tests and the single-flight proof count them). */
  readonly sent = { get: 0, head: 0, list: 0, tagging: 0, put: 0, delete: 0 };

  constructor(readonly settings: SourceSettings) {
    this.http = new S3Http({
      backendId: `source:${settings.bucket}`,
      accessKeyId: settings.accessKeyId,
      secretAccessKey: settings.secretAccessKey,
      region: settings.region,
      timeoutMs: settings.timeoutMs,
      retries: 2,
      retryBaseMs: 100,
      fetch: settings.fetch ?? ((req) => fetch(req)),
    });
    const endpoint = new URL(settings.endpoint);
    const base = endpoint.pathname.replace(/\/+$/, '');
    if (settings.pathStyle === false) endpoint.host = `${settings.bucket}.${endpoint.host}`;
    else endpoint.pathname = `${base}/${encodeSegment(settings.bucket)}`;
    this.bucketUrl = endpoint.toString().replace(/\/+$/, '');
  }

  private objectUrl(key: string, query?: string): string {
    return `${this.bucketUrl}/${key.split('/').map(encodeSegment).join('/')}${query ? `?${query}` : ''}`;
  }

  /** GET of `key` with `headers` (Range, If-*) forwarded; `partNumber` as the query parameter. */
  async get(key: string, headers: Record<string, string>, partNumber?: number | null): Promise<SourceAnswer> {
    this.sent.get++;
    const url = this.objectUrl(key, partNumber ? `partNumber=${partNumber}` : undefined);
    const ex = await this.http.send({ method: 'GET', url, headers }, answered);
    if (!ex.res.body || (ex.res.status !== 200 && ex.res.status !== 206)) {
      await ex.res.body?.cancel().catch(() => {});
      ex.done();
      return { status: ex.res.status, headers: ex.res.headers, body: null, release: () => {} };
    }
    const reader = ex.res.body.getReader();
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      ex.done();
    };
    const body = new ReadableStream<Uint8Array>(
      {
        async pull(controller) {
          try {
            const { done, value } = await reader.read();
            if (done) {
              release();
              controller.close();
              return;
            }
            ex.touch();
            controller.enqueue(value);
          } catch (err) {
            release();
            controller.error(ex.mapError(err));
          }
        },
        cancel(reason) {
          release();
          return reader.cancel(reason).catch(() => {});
        },
      },
      { highWaterMark: 0 },
    );
    return { status: ex.res.status, headers: ex.res.headers, body, release };
  }

  async head(key: string, headers: Record<string, string>, partNumber?: number | null): Promise<SourceAnswer> {
    this.sent.head++;
    const ex = await this.http.send({ method: 'HEAD', url: this.objectUrl(key, partNumber ? `partNumber=${partNumber}` : undefined), headers }, answered);
    ex.done();
    return { status: ex.res.status, headers: ex.res.headers, body: null, release: () => {} };
  }

  /**
   * The part sizes of the source's multipart object of ETag `etag` ("…-N"): one HEAD per part with
   * `partNumber` (If-Match the ETag, 8 at a time), as S3 answers it (206, or 200 with the part's
   * length, and `x-amz-mp-parts-count`). Null when the ETag is not a multipart one, or the source
   * does not answer parts (a server that ignores `partNumber` answers the whole object each time:
   * the sizes then do not add up to `size`), or the object changed meanwhile (412, 404).
   */
  async partSizes(key: string, etag: string, size: number): Promise<number[] | null> {
    const count = Number(/-(\d+)"?$/.exec(etag)?.[1] ?? 0);
    if (!Number.isSafeInteger(count) || count < 2 || count > 10_000) return null;
    const sizes: number[] = new Array(count).fill(0);
    let broken = false;
    for (let from = 1; from <= count && !broken; from += 8) {
      await Promise.all(
        Array.from({ length: Math.min(8, count - from + 1) }, async (_, i) => {
          const n = from + i;
          const answer = await this.head(key, { 'if-match': etag }, n);
          const length = Number(answer.headers.get('content-length'));
          const parts = Number(answer.headers.get('x-amz-mp-parts-count'));
          if ((answer.status !== 200 && answer.status !== 206) || parts !== count || !Number.isSafeInteger(length)) broken = true;
          else sizes[n - 1] = length;
        }),
      );
    }
    return broken || sizes.reduce((a, b) => a + b, 0) !== size ? null : sizes;
  }

  /**
   * Write-through's PUT (write-through.ts): `body` streamed, `size` bytes, with the object's
   * stored headers (Content-Type, x-amz-meta-*, ...). Never retried here (a stream cannot be
   * replayed): the caller's retry record sends it again. Resolves with the source's ETag.
   */
  async put(key: string, body: ReadableStream<Uint8Array>, size: number, headers: Record<string, string>): Promise<string> {
    this.sent.put++;
    const ex = await this.http.send(
      { method: 'PUT', url: this.objectUrl(key), headers: { ...headers, 'content-length': String(size) }, body },
      (s) => s === 200,
    );
    await ex.res.body?.cancel().catch(() => {});
    ex.done();
    return ex.res.headers.get('etag') ?? '';
  }

  /** Write-through's DELETE: a key the source does not have is no error (S3 answers 204 either way). */
  async delete(key: string): Promise<void> {
    this.sent.delete++;
    const ex = await this.http.send({ method: 'DELETE', url: this.objectUrl(key) }, (s) => s === 204 || s === 200 || s === 404);
    await ex.res.body?.cancel().catch(() => {});
    ex.done();
  }

  /** The object's tags (GetObjectTagging), sorted by key; [] when it has none or the source keeps none. */
  async tags(key: string): Promise<{ key: string; value: string }[]> {
    this.sent.tagging++;
    const ex = await this.http.send({ method: 'GET', url: this.objectUrl(key, 'tagging') }, (s) => s === 200 || s === 404 || s === 501);
    let xml: string;
    try {
      xml = await ex.res.text();
    } catch (err) {
      throw ex.mapError(err);
    } finally {
      ex.done();
    }
    if (ex.res.status !== 200) return [];
    return blocks(xml, 'Tag')
      .map((t) => ({ key: leafText(t, 'Key') ?? '', value: leafText(t, 'Value') ?? '' }))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  /** One ListObjectsV2 page (encoding-type url asked, decoded only when the source echoes it). */
  async list(r: SourceListRequest): Promise<SourceListPage> {
    this.sent.list++;
    const query: [string, string][] = [
      ['list-type', '2'],
      ['prefix', r.prefix],
      ['max-keys', String(Math.min(Math.max(r.maxKeys, 1), 1000))],
      ['encoding-type', 'url'],
    ];
    if (r.delimiter) query.push(['delimiter', r.delimiter]);
    if (r.continuationToken !== null) query.push(['continuation-token', r.continuationToken]);
    else if (r.startAfter !== null) query.push(['start-after', r.startAfter]);
    query.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
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
    return parseListing(xml, (m) => this.http.error('Unavailable', m));
  }
}

/** Statuses the read-through answers as the source did (the rest are errors, retried per policy). */
const answered = (s: number) => s === 200 || s === 206 || s === 304 || s === 404 || s === 412 || s === 416 || s === 400;

function parseListing(xml: string, fail: (message: string) => Error): SourceListPage {
  if (!/<ListBucketResult[\s>]/.test(xml)) throw fail('source listing: not a ListBucketResult document');
  const urlEncoded = leafText(xml, 'EncodingType') === 'url';
  const decode = (k: string) => (urlEncoded ? decodeURIComponent(k.replace(/\+/g, ' ')) : k);
  const objects = blocks(xml, 'Contents').map((c): SourceListEntry => {
    const key = leafText(c, 'Key');
    const size = Number(leafText(c, 'Size'));
    if (key === undefined || !Number.isSafeInteger(size)) throw fail('source listing: Contents without Key or Size');
    const storageClass = leafText(c, 'StorageClass');
    return {
      key: decode(key),
      size,
      etag: leafText(c, 'ETag') ?? '""',
      lastModified: new Date(leafText(c, 'LastModified') ?? Number.NaN),
      ...(storageClass && storageClass !== 'STANDARD' ? { storageClass } : {}),
    };
  });
  const commonPrefixes = blocks(xml, 'CommonPrefixes').map((c) => decode(leafText(c, 'Prefix') ?? ''));
  return {
    objects,
    commonPrefixes,
    isTruncated: leafText(xml, 'IsTruncated') === 'true',
    nextContinuationToken: leafText(xml, 'NextContinuationToken') || null,
  };
}
