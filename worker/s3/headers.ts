/**
 * Object metadata and precondition headers, in and out.
 * Spec: S3 PutObject / GetObject / HeadObject: Content-Type, Content-Encoding (minus the
 * `aws-chunked` transfer coding), Content-Disposition, Content-Language, Cache-Control, Expires
 * and `x-amz-meta-*` (user metadata at most 2 KB: names + values in UTF-8, MetadataTooLarge);
 * GetObject's `response-*` query overrides; RFC 9110 conditional headers (unparseable dates are
 * ignored, as RFC 9110 says). An override value becomes a response header: one with CR, LF, NUL
 * or another control character (which no header may carry), or with a character outside
 * ISO-8859-1, is InvalidArgument, as AWS answers it (RFC 5987 `filename*=UTF-8''...` is the way
 * to name a non-Latin file). Known gap: workerd sends characters U+0080-U+00FF as UTF-8.
 * User metadata sent as UTF-8 bytes is stored as the text it is and returned RFC 2047 encoded
 * when it is not printable ASCII, as S3 returns it (utf8HeaderText, rfc2047).
 */
import type { ObjectHead, ObjectMetadata, ReadConditions, WriteConditions } from '../model/object-store.ts';
import { checksumResponseHeaders } from './checksum-headers.ts';
import { S3Error } from '../model/errors.ts';
import { toBase64 } from '../model/bytes.ts';
import { sseResponseHeaders } from './sse-headers.ts';
import { lockResponseHeaders } from './object-lock.ts';

const MAX_USER_METADATA_BYTES = 2048;
const STANDARD = 'STANDARD';
const DEFAULT_CONTENT_TYPE = 'binary/octet-stream';

const SYSTEM: [keyof Omit<ObjectMetadata, 'user' | 'tags' | 'sse' | 'objectLock' | 'storageClass' | 'adopted' | 'sourceParts' | 'acl'>, string][] = [
  ['contentType', 'content-type'],
  ['contentEncoding', 'content-encoding'],
  ['contentDisposition', 'content-disposition'],
  ['contentLanguage', 'content-language'],
  ['cacheControl', 'cache-control'],
  ['expires', 'expires'],
];

export function readMetadata(headers: Headers): ObjectMetadata {
  const meta: ObjectMetadata = { user: {} };
  for (const [field, header] of SYSTEM) {
    const value = headers.get(header);
    if (value !== null) meta[field] = value;
  }
  if (meta.contentEncoding !== undefined) {
    // aws-chunked is the transfer framing (decoded by the gate), not a property of the object.
    const codings = meta.contentEncoding
      .split(',')
      .map((c) => c.trim())
      .filter((c) => c && c.toLowerCase() !== 'aws-chunked');
    if (codings.length) meta.contentEncoding = codings.join(', ');
    else delete meta.contentEncoding;
  }
  // The store refuses a class it does not have (InvalidStorageClass); STANDARD is recorded as no class.
  const storageClass = headers.get('x-amz-storage-class');
  if (storageClass !== null && storageClass !== STANDARD) meta.storageClass = storageClass;
  let size = 0;
  for (const [name, value] of headers) {
    if (!name.startsWith('x-amz-meta-')) continue;
    const short = name.slice('x-amz-meta-'.length);
    meta.user[short] = utf8HeaderText(value);
    size += new TextEncoder().encode(short + value).length;
  }
  if (size > MAX_USER_METADATA_BYTES) {
    throw new S3Error('MetadataTooLarge', undefined, { Size: String(size), MaxSizeAllowed: String(MAX_USER_METADATA_BYTES) });
  }
  return meta;
}

/**
 * A header value as text: the platform hands header bytes over one character per byte, so a
 * client's UTF-8 (boto3, curl and the SDKs send metadata values as UTF-8 bytes) arrives as
 * mojibake; bytes that are valid UTF-8 are read as UTF-8, anything else is kept as sent.
 */
export function utf8HeaderText(value: string): string {
  // eslint-disable-next-line no-control-regex
  if (!/[\u0080-\u00ff]/.test(value) || /[^\u0000-\u00ff]/.test(value)) return value;
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(Uint8Array.from(value, (c) => c.charCodeAt(0)));
  } catch {
    return value;
  }
}

/** A metadata value as S3 returns it: printable ASCII as it is, anything else RFC 2047
 *  encoded (`=?UTF-8?B?<base64 of the UTF-8>?=`), as S3 answers non-ASCII user metadata. */
export function rfc2047(value: string): string {
  if (/^[\x20-\x7e\t]*$/.test(value)) return value;
  return `=?UTF-8?B?${toBase64(new TextEncoder().encode(value))}?=`;
}

function readDate(value: string | null): Date | undefined {
  if (value === null) return undefined;
  const t = Date.parse(value);
  return Number.isNaN(t) ? undefined : new Date(t);
}

/** GET/HEAD preconditions; `prefix` 'x-amz-copy-source-' reads a copy source's conditions. */
export function readReadConditions(headers: Headers, prefix = ''): ReadConditions {
  const cond: ReadConditions = {};
  const ifMatch = headers.get(prefix + 'if-match');
  const ifNoneMatch = headers.get(prefix + 'if-none-match');
  if (ifMatch !== null) cond.ifMatch = ifMatch;
  if (ifNoneMatch !== null) cond.ifNoneMatch = ifNoneMatch;
  const since = readDate(headers.get(prefix + 'if-modified-since'));
  const unmodified = readDate(headers.get(prefix + 'if-unmodified-since'));
  if (since) cond.ifModifiedSince = since;
  if (unmodified) cond.ifUnmodifiedSince = unmodified;
  return cond;
}

/** Conditional writes: `If-None-Match: *` and `If-Match: <etag>`. */
export function readWriteConditions(headers: Headers): WriteConditions {
  const cond: WriteConditions = {};
  const ifNoneMatch = headers.get('if-none-match');
  const ifMatch = headers.get('if-match');
  if (ifNoneMatch !== null) {
    if (ifNoneMatch.trim() !== '*') throw new S3Error('NotImplemented', 'If-None-Match on a write accepts only *.', { Header: 'If-None-Match' });
    cond.ifNoneMatch = '*';
  }
  if (ifMatch !== null) cond.ifMatch = ifMatch;
  return cond;
}

/** A `response-*` value, checked to be one a response header can carry. */
function overrideValue(param: string, value: string): string {
  const refuse = (why: string) => new S3Error('InvalidArgument', why, { ArgumentName: param });
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0008\u000a-\u001f\u007f]/.test(value)) throw refuse(`${param} contains a control character, which a header cannot carry.`);
  if (/[^\u0000-\u00ff]/.test(value)) throw refuse('Header value cannot be represented using ISO-8859-1.');
  return value;
}

/** Response headers of GetObject / HeadObject. */
export function objectHeaders(obj: ObjectHead, options: { checksumMode: boolean; query: URLSearchParams }): Headers {
  const h = new Headers();
  const { metadata: m } = obj;
  h.set('ETag', obj.etag);
  h.set('Last-Modified', obj.lastModified.toUTCString());
  h.set('Accept-Ranges', 'bytes');
  h.set('Content-Type', m.contentType ?? DEFAULT_CONTENT_TYPE);
  for (const [field, header] of SYSTEM) {
    const value = m[field];
    if (value !== undefined && field !== 'contentType') h.set(header, value);
  }
  for (const [name, value] of Object.entries(m.user)) h.set(`x-amz-meta-${name}`, rfc2047(utf8HeaderText(value)));
  if (m.tags?.length) h.set('x-amz-tagging-count', String(m.tags.length));
  // Left out for STANDARD, as S3 answers.
  if (m.storageClass !== undefined && m.storageClass !== STANDARD) h.set('x-amz-storage-class', m.storageClass);
  for (const [name, value] of Object.entries(sseResponseHeaders(m.sse))) h.set(name, value);
  for (const [name, value] of Object.entries(lockResponseHeaders(m.objectLock))) h.set(name, value);
  for (const [param, value] of options.query) {
    if (param.startsWith('response-')) h.set(param.slice('response-'.length), overrideValue(param, value));
  }
  if (obj.range) {
    // An empty part (partNumber) has no byte range to name: 206 with no bytes, no Content-Range.
    if (obj.range.end >= obj.range.start) h.set('Content-Range', `bytes ${obj.range.start}-${obj.range.end}/${obj.size}`);
    h.set('Content-Length', String(obj.range.end - obj.range.start + 1));
    // A part's own checksum covers exactly the bytes served; a Range has none.
    if (options.checksumMode && obj.partChecksum) for (const [k, v] of Object.entries(checksumResponseHeaders(obj.partChecksum))) h.set(k, v);
  } else {
    h.set('Content-Length', String(obj.size));
    if (options.checksumMode) for (const [k, v] of Object.entries(checksumResponseHeaders(obj.checksum))) h.set(k, v);
  }
  return h;
}
