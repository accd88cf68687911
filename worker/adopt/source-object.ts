/**
 * A source's GET/HEAD answer as the object store's result (model/object-store.ts): the head
 * S3 handlers render (ETag, Last-Modified, Content-Type and the other stored headers, user
 * metadata, Content-Range, parts count), or the S3Error the source answered (304 and 412 with
 * their ETag and Last-Modified, 416, 404 NoSuchKey), so a read of an object not yet adopted
 * answers as the source did. And the request headers a read forwards to the source.
 */
import { S3Error } from '../model/errors.ts';
import type { ByteRange, GetObjectOptions, ObjectHead, ObjectMetadata } from '../model/object-store.ts';

const SYSTEM: [keyof ObjectMetadata, string][] = [
  ['contentType', 'content-type'],
  ['contentEncoding', 'content-encoding'],
  ['contentDisposition', 'content-disposition'],
  ['contentLanguage', 'content-language'],
  ['cacheControl', 'cache-control'],
  ['expires', 'expires'],
];

/** Range and conditional headers of a read, as the client sent them (parsed), for the source. */
export function forwardedHeaders(o: GetObjectOptions): Record<string, string> {
  const h: Record<string, string> = {};
  if (o.range) h.range = rangeHeader(o.range);
  const c = o.conditions;
  if (c.ifMatch !== undefined) h['if-match'] = c.ifMatch;
  if (c.ifNoneMatch !== undefined) h['if-none-match'] = c.ifNoneMatch;
  if (c.ifModifiedSince) h['if-modified-since'] = c.ifModifiedSince.toUTCString();
  if (c.ifUnmodifiedSince) h['if-unmodified-since'] = c.ifUnmodifiedSince.toUTCString();
  return h;
}

const rangeHeader = (r: ByteRange): string => ('suffixLength' in r ? `bytes=-${r.suffixLength}` : `bytes=${r.start}-${r.end ?? ''}`);

/** The object's metadata from a 200/206 answer's headers (x-amz-meta-* as sent: RFC 2047 text stays encoded). */
export function metadataOf(headers: Headers): ObjectMetadata {
  const meta: ObjectMetadata = { user: {} };
  for (const [field, header] of SYSTEM) {
    const value = headers.get(header);
    if (value !== null) (meta as unknown as Record<string, string>)[field] = value;
  }
  for (const [name, value] of headers) if (name.startsWith('x-amz-meta-')) meta.user[name.slice('x-amz-meta-'.length)] = value;
  const storageClass = headers.get('x-amz-storage-class');
  if (storageClass && storageClass !== 'STANDARD') meta.storageClass = storageClass;
  return meta;
}

/**
 * The head of a 200/206 answer, or the S3Error of any other. `key` names the object in errors.
 * A 206's size and range come from Content-Range; a 200's from Content-Length.
 */
export function headOf(key: string, status: number, headers: Headers, partNumber?: number | null): ObjectHead {
  const etag = headers.get('etag') ?? '""';
  const lastModified = new Date(headers.get('last-modified') ?? Number.NaN);
  // A 304 or 412 carries the ETag and Last-Modified the source sent with it, and only those.
  const shown: Record<string, string> = {};
  for (const [name, header] of [
    ['ETag', 'etag'],
    ['Last-Modified', 'last-modified'],
  ] as const) {
    const value = headers.get(header);
    if (value !== null) shown[name] = value;
  }
  if (status === 304) throw new S3Error('NotModified').withHeaders(shown);
  if (status === 412) throw new S3Error('PreconditionFailed', undefined, { Condition: 'If-Match' }).withHeaders(shown);
  if (status === 404) throw new S3Error('NoSuchKey', undefined, { Key: key });
  if (status === 416) {
    const range = headers.get('content-range');
    throw new S3Error('InvalidRange').withHeaders(range ? { 'Content-Range': range } : {});
  }
  if (status === 400) throw new S3Error('InvalidArgument', 'the source bucket refused the read');
  const length = Number(headers.get('content-length'));
  const partsCount = Number(headers.get('x-amz-mp-parts-count')) || undefined;
  const base = { key, etag, lastModified, metadata: metadataOf(headers), checksum: null, ...(partsCount ? { partsCount } : {}) };
  const contentRange = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(headers.get('content-range') ?? '');
  if (status === 206 && contentRange) {
    return { ...base, size: Number(contentRange[3]), range: { start: Number(contentRange[1]), end: Number(contentRange[2]) } };
  }
  if (status === 206 && partNumber) return { ...base, size: length, range: { start: 0, end: length - 1 } };
  return { ...base, size: Number.isSafeInteger(length) ? length : 0, range: null };
}
