/**
 * The console's S3 client: every request to this gateway's own S3 API, path-style on the page's
 * origin, signed in the browser with SigV4 (aws4fetch's signer over Web Crypto) by the key the user
 * typed. No retries: a refused or failed request shows S3's own error to the user. Uploads go by
 * XMLHttpRequest (fetch reports no upload progress), signed the same way with an unsigned payload.
 * Small request documents (DeleteObjects, bucket settings) carry their SHA-256 both as the signed
 * payload hash and as x-amz-checksum-sha256 (S3 wants a digest on them; Web Crypto has no MD5).
 */
import { AwsV4Signer } from 'aws4fetch';
import { childText, childrenNamed, parseXml, textOf } from './xml.ts';

export interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
}

/** A refusal or failure, with S3's own code and message. */
export class S3RequestError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

export interface Bucket {
  name: string;
  created: string;
}

export interface ObjectEntry {
  key: string;
  size: number;
  modified: string;
  etag: string;
  storageClass: string;
}

export interface ObjectPage {
  folders: string[];
  objects: ObjectEntry[];
  nextToken: string | null;
}

export interface VersionEntry {
  key: string;
  versionId: string;
  isLatest: boolean;
  deleteMarker: boolean;
  size: number;
  modified: string;
  etag: string;
}

export interface VersionPage {
  versions: VersionEntry[];
  /** Common prefixes, when listed with a delimiter. */
  folders: string[];
  next: { keyMarker: string; versionIdMarker: string } | null;
}

export interface Part {
  partNumber: number;
  etag: string;
  size: number;
}

/** Bucket settings the console reads and writes as documents (their query flag). */
export type BucketDocument = 'versioning' | 'lifecycle' | 'cors' | 'policy' | 'encryption' | 'object-lock' | 'logging' | 'tagging' | 'notification';

const xmlText = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

const encodeKey = (key: string) => key.split('/').map(encodeURIComponent).join('/');

async function sha256(body: string): Promise<{ hex: string; base64: string }> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(body)));
  return {
    hex: [...digest].map((b) => b.toString(16).padStart(2, '0')).join(''),
    base64: btoa(String.fromCharCode(...digest)),
  };
}

/** S3's XML error, the operator routes' JSON one, or the status line. */
export async function errorOf(res: Response): Promise<S3RequestError> {
  const text = await res.text().catch(() => '');
  // A HEAD answer has no body: S3 says what it can in headers.
  if (!text && res.status === 404 && res.headers.get('x-amz-delete-marker') === 'true')
    return new S3RequestError('NoSuchKey', 'the current version is a delete marker: the object was deleted', 404);
  return errorFromText(text, res.status, res.statusText);
}

export function errorFromText(text: string, status: number, statusText = ''): S3RequestError {
  if (text.startsWith('{')) {
    try {
      const j = JSON.parse(text) as { code?: string; message?: string };
      if (j.code) return new S3RequestError(j.code, j.message ?? j.code, status);
    } catch {}
  }
  if (text.includes('<Error>')) {
    const doc = parseXml(text);
    const code = textOf(doc, 'Code') ?? `HTTP ${status}`;
    return new S3RequestError(code, textOf(doc, 'Message') ?? code, status);
  }
  return new S3RequestError(`HTTP ${status}`, statusText || `the gateway answered ${status}`, status);
}

export class S3 {
  private readonly cache = new Map<string, ArrayBuffer>();

  constructor(
    private readonly credentials: Credentials,
    readonly region: string,
    readonly origin: string = location.origin,
  ) {}

  get accessKeyId(): string {
    return this.credentials.accessKeyId;
  }

  url(bucket?: string, key?: string, query: Record<string, string> = {}): URL {
    const path = bucket === undefined ? '/' : key === undefined ? `/${encodeURIComponent(bucket)}` : `/${encodeURIComponent(bucket)}/${encodeKey(key)}`;
    const u = new URL(path, this.origin);
    for (const [k, v] of Object.entries(query)) u.searchParams.set(k, v);
    // S3 sub-resources are bare flags (`?versioning`), not `?versioning=`.
    u.search = u.search.replace(/=(?=&|$)/g, '');
    return u;
  }

  /** Signed headers (and URL) for a request; `payloadHash` absent: UNSIGNED-PAYLOAD. */
  async sign(method: string, url: URL, headers: Record<string, string> = {}, payloadHash?: string): Promise<{ url: URL; headers: Headers }> {
    const h = new Headers(headers);
    if (payloadHash) h.set('x-amz-content-sha256', payloadHash);
    const signer = new AwsV4Signer({
      method,
      url: url.toString(),
      headers: h,
      accessKeyId: this.credentials.accessKeyId,
      secretAccessKey: this.credentials.secretAccessKey,
      service: 's3',
      region: this.region,
      cache: this.cache,
    });
    const signed = await signer.sign();
    return { url: signed.url, headers: signed.headers };
  }

  /**
   * One signed request; a non-2xx answer throws S3's error. A body's SHA-256 is always signed;
   * `digest` also sends it as x-amz-checksum-sha256 (the documents S3 wants a digest on: not
   * CompleteMultipartUpload, where that header is the whole object's checksum).
   */
  async request(
    method: string,
    url: URL,
    o: { headers?: Record<string, string>; body?: string; digest?: boolean; signal?: AbortSignal } = {},
  ): Promise<Response> {
    const headers = { ...o.headers };
    let hash: string | undefined;
    if (o.body !== undefined) {
      const d = await sha256(o.body);
      hash = d.hex;
      if (o.digest) headers['x-amz-checksum-sha256'] = d.base64;
    }
    const signed = await this.sign(method, url, headers, hash);
    const res = await fetch(signed.url, { method, headers: signed.headers, body: o.body, signal: o.signal, credentials: 'omit', cache: 'no-store' });
    if (!res.ok) throw await errorOf(res);
    return res;
  }

  async whoami(base: string): Promise<{ accessKeyId: string; admin: boolean; grants: { buckets: string[]; prefixes?: string[]; actions: string[] }[] }> {
    return (await this.request('GET', new URL(`${base}/whoami`, this.origin))).json();
  }

  async listBuckets(): Promise<Bucket[]> {
    const doc = parseXml(await (await this.request('GET', this.url())).text());
    return childrenNamed(doc.documentElement, 'Buckets', 'Bucket').map((b) => ({ name: childText(b, 'Name'), created: childText(b, 'CreationDate') }));
  }

  async createBucket(bucket: string): Promise<void> {
    await this.request('PUT', this.url(bucket));
  }

  async listObjects(bucket: string, o: { prefix: string; delimiter?: string; token?: string | null; maxKeys?: number }): Promise<ObjectPage> {
    const q: Record<string, string> = { 'list-type': '2', prefix: o.prefix, 'max-keys': String(o.maxKeys ?? 200) };
    if (o.delimiter) q.delimiter = o.delimiter;
    if (o.token) q['continuation-token'] = o.token;
    const doc = parseXml(await (await this.request('GET', this.url(bucket, undefined, q))).text());
    const root = doc.documentElement;
    return {
      folders: childrenNamed(root, 'CommonPrefixes').map((p) => childText(p, 'Prefix')),
      objects: childrenNamed(root, 'Contents').map((c) => ({
        key: childText(c, 'Key'),
        size: Number(childText(c, 'Size')),
        modified: childText(c, 'LastModified'),
        etag: childText(c, 'ETag'),
        storageClass: childText(c, 'StorageClass') || 'STANDARD',
      })),
      nextToken: childText(root, 'IsTruncated') === 'true' ? childText(root, 'NextContinuationToken') || null : null,
    };
  }

  async listVersions(bucket: string, prefix: string, after?: VersionPage['next'], o: { delimiter?: string; maxKeys?: number } = {}): Promise<VersionPage> {
    const q: Record<string, string> = { versions: '', prefix, 'max-keys': String(o.maxKeys ?? 200) };
    if (o.delimiter) q.delimiter = o.delimiter;
    if (after) {
      q['key-marker'] = after.keyMarker;
      q['version-id-marker'] = after.versionIdMarker;
    }
    const doc = parseXml(await (await this.request('GET', this.url(bucket, undefined, q))).text());
    const root = doc.documentElement;
    const versions: VersionEntry[] = [];
    for (const el of Array.from(root.children)) {
      if (el.localName !== 'Version' && el.localName !== 'DeleteMarker') continue;
      versions.push({
        key: childText(el, 'Key'),
        versionId: childText(el, 'VersionId'),
        isLatest: childText(el, 'IsLatest') === 'true',
        deleteMarker: el.localName === 'DeleteMarker',
        size: Number(childText(el, 'Size') || 0),
        modified: childText(el, 'LastModified'),
        etag: childText(el, 'ETag'),
      });
    }
    const truncated = childText(root, 'IsTruncated') === 'true';
    return {
      versions,
      folders: childrenNamed(root, 'CommonPrefixes').map((p) => childText(p, 'Prefix')),
      next: truncated ? { keyMarker: childText(root, 'NextKeyMarker'), versionIdMarker: childText(root, 'NextVersionIdMarker') } : null,
    };
  }

  async headObject(bucket: string, key: string, versionId?: string): Promise<Headers> {
    const q: Record<string, string> = versionId ? { versionId } : {};
    return (await this.request('HEAD', this.url(bucket, key, q), { headers: { 'x-amz-checksum-mode': 'ENABLED' } })).headers;
  }

  async getTags(bucket: string, key: string, versionId?: string): Promise<[string, string][]> {
    const q: Record<string, string> = { tagging: '' };
    if (versionId) q.versionId = versionId;
    const doc = parseXml(await (await this.request('GET', this.url(bucket, key, q))).text());
    return childrenNamed(doc.documentElement, 'TagSet', 'Tag').map((t) => [childText(t, 'Key'), childText(t, 'Value')]);
  }

  /** Replaces the object's tags (PutObjectTagging; none: DeleteObjectTagging). */
  async putTags(bucket: string, key: string, tags: [string, string][]): Promise<void> {
    if (!tags.length) return void (await this.request('DELETE', this.url(bucket, key, { tagging: '' })));
    const body = `<?xml version="1.0" encoding="UTF-8"?><Tagging><TagSet>${tags
      .map(([k, v]) => `<Tag><Key>${xmlText(k)}</Key><Value>${xmlText(v)}</Value></Tag>`)
      .join('')}</TagSet></Tagging>`;
    await this.request('PUT', this.url(bucket, key, { tagging: '' }), { body, digest: true, headers: { 'content-type': 'application/xml' } });
  }

  /** Sets or lifts the legal hold of the current version (PutObjectLegalHold). */
  async putLegalHold(bucket: string, key: string, on: boolean, versionId?: string): Promise<void> {
    const q: Record<string, string> = { 'legal-hold': '' };
    if (versionId) q.versionId = versionId;
    const body = `<?xml version="1.0" encoding="UTF-8"?><LegalHold><Status>${on ? 'ON' : 'OFF'}</Status></LegalHold>`;
    await this.request('PUT', this.url(bucket, key, q), { body, digest: true, headers: { 'content-type': 'application/xml' } });
  }

  /** Sets the retention of the current version (PutObjectRetention); `bypass`: x-amz-bypass-governance-retention. */
  async putRetention(
    bucket: string,
    key: string,
    mode: 'GOVERNANCE' | 'COMPLIANCE',
    until: Date,
    o: { versionId?: string; bypass?: boolean } = {},
  ): Promise<void> {
    const q: Record<string, string> = { retention: '' };
    if (o.versionId) q.versionId = o.versionId;
    const body = `<?xml version="1.0" encoding="UTF-8"?><Retention><Mode>${mode}</Mode><RetainUntilDate>${until.toISOString()}</RetainUntilDate></Retention>`;
    const headers: Record<string, string> = { 'content-type': 'application/xml' };
    if (o.bypass) headers['x-amz-bypass-governance-retention'] = 'true';
    await this.request('PUT', this.url(bucket, key, q), { body, digest: true, headers });
  }

  /** DeleteObjects (at most 1000 a call); answers the keys S3 refused, with its error. */
  async deleteObjects(bucket: string, entries: { key: string; versionId?: string }[]): Promise<{ key: string; code: string; message: string }[]> {
    const xmlEscape = (s: string) => s.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);
    const failed: { key: string; code: string; message: string }[] = [];
    for (let i = 0; i < entries.length; i += 1000) {
      const body = `<?xml version="1.0" encoding="UTF-8"?><Delete><Quiet>true</Quiet>${entries
        .slice(i, i + 1000)
        .map((e) => `<Object><Key>${xmlEscape(e.key)}</Key>${e.versionId ? `<VersionId>${xmlEscape(e.versionId)}</VersionId>` : ''}</Object>`)
        .join('')}</Delete>`;
      const res = await this.request('POST', this.url(bucket, undefined, { delete: '' }), {
        body,
        digest: true,
        headers: { 'content-type': 'application/xml' },
      });
      const doc = parseXml(await res.text());
      for (const e of childrenNamed(doc.documentElement, 'Error'))
        failed.push({ key: childText(e, 'Key'), code: childText(e, 'Code'), message: childText(e, 'Message') });
    }
    return failed;
  }

  /** CopyObject (up to S3's 5 GiB): metadata and tags copied; answers the new version's id, if any. */
  async copyObject(from: { bucket: string; key: string; versionId?: string }, to: { bucket: string; key: string }): Promise<string | null> {
    const source = `/${encodeURIComponent(from.bucket)}/${encodeKey(from.key)}${from.versionId ? `?versionId=${encodeURIComponent(from.versionId)}` : ''}`;
    const res = await this.request('PUT', this.url(to.bucket, to.key), { headers: { 'x-amz-copy-source': source, 'x-amz-metadata-directive': 'COPY' } });
    // S3 may answer 200 with an error document once the copy has started.
    const text = await res.text();
    if (text.includes('<Error>')) throw errorFromText(text, 200);
    return res.headers.get('x-amz-version-id');
  }

  /** Copies `versionId` of `key` over the key's current version (a new version, metadata and tags copied). */
  restoreVersion(bucket: string, key: string, versionId: string): Promise<string | null> {
    return this.copyObject({ bucket, key, versionId }, { bucket, key });
  }

  /** Whether `key` has a current version (HeadObject: 404 is no, any other refusal is thrown). */
  async exists(bucket: string, key: string): Promise<boolean> {
    try {
      await this.request('HEAD', this.url(bucket, key));
      return true;
    } catch (err) {
      if (err instanceof S3RequestError && err.status === 404) return false;
      throw err;
    }
  }

  /** A presigned GET URL valid for `seconds` (at most 7 days, as S3). */
  async presignGet(bucket: string, key: string, seconds: number, o: { versionId?: string; attachment?: string } = {}): Promise<string> {
    const q: Record<string, string> = { 'X-Amz-Expires': String(seconds) };
    if (o.versionId) q.versionId = o.versionId;
    if (o.attachment !== undefined) q['response-content-disposition'] = `attachment; filename*=UTF-8''${encodeURIComponent(o.attachment)}`;
    const url = this.url(bucket, key, q);
    const signer = new AwsV4Signer({
      method: 'GET',
      url: url.toString(),
      accessKeyId: this.credentials.accessKeyId,
      secretAccessKey: this.credentials.secretAccessKey,
      service: 's3',
      region: this.region,
      cache: this.cache,
      signQuery: true,
    });
    return (await signer.sign()).url.toString();
  }

  /** A bucket setting as S3's document; null when the bucket has none. */
  async getDocument(bucket: string, which: BucketDocument): Promise<string | null> {
    try {
      return await (await this.request('GET', this.url(bucket, undefined, { [which]: '' }))).text();
    } catch (err) {
      if (err instanceof S3RequestError && /^NoSuch|NotFound/.test(err.code) && which !== 'versioning') return null;
      throw err;
    }
  }

  async putDocument(bucket: string, which: BucketDocument, body: string): Promise<void> {
    await this.request('PUT', this.url(bucket, undefined, { [which]: '' }), {
      body,
      digest: true,
      headers: { 'content-type': which === 'policy' ? 'application/json' : 'application/xml' },
    });
  }

  async deleteDocument(bucket: string, which: BucketDocument): Promise<void> {
    await this.request('DELETE', this.url(bucket, undefined, { [which]: '' }));
  }

  async createMultipart(bucket: string, key: string, contentType: string): Promise<string> {
    const res = await this.request('POST', this.url(bucket, key, { uploads: '' }), { headers: { 'content-type': contentType } });
    return textOf(parseXml(await res.text()), 'UploadId') ?? '';
  }

  /** The first 1,000 multipart uploads under `prefix` not yet completed or aborted. */
  async listMultipartUploads(bucket: string, prefix: string): Promise<{ key: string; uploadId: string; initiated: string }[]> {
    const root = parseXml(await (await this.request('GET', this.url(bucket, undefined, { uploads: '', prefix }))).text()).documentElement;
    return childrenNamed(root, 'Upload').map((u) => ({ key: childText(u, 'Key'), uploadId: childText(u, 'UploadId'), initiated: childText(u, 'Initiated') }));
  }

  async listParts(bucket: string, key: string, uploadId: string): Promise<Part[]> {
    const parts: Part[] = [];
    let marker = '';
    for (;;) {
      const q: Record<string, string> = { uploadId, 'max-parts': '1000' };
      if (marker) q['part-number-marker'] = marker;
      const root = parseXml(await (await this.request('GET', this.url(bucket, key, q))).text()).documentElement;
      for (const p of childrenNamed(root, 'Part'))
        parts.push({ partNumber: Number(childText(p, 'PartNumber')), etag: childText(p, 'ETag'), size: Number(childText(p, 'Size')) });
      if (childText(root, 'IsTruncated') !== 'true') return parts;
      marker = childText(root, 'NextPartNumberMarker');
    }
  }

  async completeMultipart(bucket: string, key: string, uploadId: string, parts: { partNumber: number; etag: string }[]): Promise<void> {
    const body = `<?xml version="1.0" encoding="UTF-8"?><CompleteMultipartUpload>${parts
      .map((p) => `<Part><PartNumber>${p.partNumber}</PartNumber><ETag>${p.etag.replace(/&/g, '&amp;').replace(/</g, '&lt;')}</ETag></Part>`)
      .join('')}</CompleteMultipartUpload>`;
    const res = await this.request('POST', this.url(bucket, key, { uploadId }), { body, headers: { 'content-type': 'application/xml' } });
    // S3 may answer 200 with an error document once the body has started.
    const text = await res.text();
    if (text.includes('<Error>')) throw errorFromText(text, 200);
  }

  async abortMultipart(bucket: string, key: string, uploadId: string): Promise<void> {
    await this.request('DELETE', this.url(bucket, key, { uploadId }));
  }

  /**
   * PUT `body` (a whole object, or one part with `query` {partNumber, uploadId}) by XHR, reporting
   * bytes sent; resolves the response's ETag. `signal` aborts it.
   */
  async upload(
    bucket: string,
    key: string,
    body: Blob,
    o: { query?: Record<string, string>; contentType?: string; onProgress?: (sent: number) => void; signal?: AbortSignal },
  ): Promise<string> {
    const headers: Record<string, string> = {};
    if (o.contentType) headers['content-type'] = o.contentType;
    const signed = await this.sign('PUT', this.url(bucket, key, o.query), headers);
    return new Promise<string>((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open('PUT', signed.url.toString());
      signed.headers.forEach((v, k) => {
        if (k !== 'host') xhr.setRequestHeader(k, v);
      });
      xhr.upload.onprogress = (e) => o.onProgress?.(e.loaded);
      xhr.onload = () => {
        if (xhr.status >= 200 && xhr.status < 300) resolve(xhr.getResponseHeader('etag') ?? '');
        else reject(errorFromText(xhr.responseText, xhr.status, xhr.statusText));
      };
      xhr.onerror = () => reject(new S3RequestError('NetworkError', 'the upload failed on the network', 0));
      xhr.onabort = () => reject(new DOMException('cancelled', 'AbortError'));
      if (o.signal?.aborted) return reject(new DOMException('cancelled', 'AbortError'));
      o.signal?.addEventListener('abort', () => xhr.abort(), { once: true });
      xhr.send(body);
    });
  }
}
