/**
 * One server access log record in Amazon S3's standard format: 26 space-separated fields, '-'
 * for what is unknown or does not apply; the time in brackets, Request-URI, Referer and
 * User-Agent in double quotes. Spec: S3 user guide "Amazon S3 server access log format" (its
 * 26 fields up to aclRequired; the Source region field AWS added later is not written).
 * Choices (docs/COMPATIBILITY.md): the key is URL-encoded as AWS writes it; inside a quoted
 * field the characters that would end or confuse the field (" \ [ ] and control characters)
 * are percent-encoded, and in an unquoted one also whitespace and ' (the key: encodeURIComponent
 * keeps '), so every record splits into exactly 26 fields by a shell-like splitter. Bucket owner: the gateway's one account; Requester: the access key id.
 */

export interface AccessLogFields {
  bucket: string;
  /** The bucket's owning account (model/account.ts); absent: the default account. */
  owner?: string;
  time: Date;
  remoteIp: string | null;
  requester: string | null;
  requestId: string;
  operation: string;
  key: string | null;
  method: string;
  /** The request's path and query as sent (raw). */
  uri: string;
  status: number;
  errorCode: string | null;
  bytesSent: number | null;
  objectSize: number | null;
  totalMs: number | null;
  turnAroundMs: number | null;
  referer: string | null;
  userAgent: string | null;
  versionId: string | null;
  hostId: string | null;
  sigVersion: 'SigV2' | 'SigV4' | null;
  cipherSuite: string | null;
  authType: 'AuthHeader' | 'QueryString' | null;
  host: string | null;
  tlsVersion: string | null;
  /** "Yes" when an ACL let the request in (s3/acl-access.ts); absent: "-". */
  aclRequired?: boolean;
}

export const ACCESS_LOG_OWNER = 'shardgate';

const MAX_FIELD = 1024;

const dash = (v: string | number | null | undefined) => (v === null || v === undefined || v === '' ? '-' : String(v));
/** An unquoted field: no whitespace (a space would split it). */
const bare = (v: string | number | null | undefined) => dash(typeof v === 'string' ? v.slice(0, MAX_FIELD).replace(/[\s"'[\]\\]/g, (c) => pct(c)) : v);
// eslint-disable-next-line no-control-regex
const quoted = (v: string | null) => `"${v === null || v === '' ? '-' : v.slice(0, MAX_FIELD).replace(/["[\]\\\u0000-\u001f\u007f]/g, (c) => pct(c))}"`;
const pct = (c: string) => '%' + c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0');

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const two = (n: number) => String(n).padStart(2, '0');

/** `[06/Feb/2019:00:00:38 +0000]` */
export function logTime(d: Date): string {
  return `[${two(d.getUTCDate())}/${MONTHS[d.getUTCMonth()]}/${d.getUTCFullYear()}:${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())} +0000]`;
}

/** A key as the Key field holds it: URL-encoded, '/' kept. */
export const logKey = (key: string) => encodeURIComponent(key).replace(/%2F/g, '/');

export function formatAccessLogRecord(f: AccessLogFields): string {
  return [
    f.owner ?? ACCESS_LOG_OWNER,
    bare(f.bucket),
    logTime(f.time),
    bare(f.remoteIp),
    bare(f.requester),
    bare(f.requestId),
    bare(f.operation),
    f.key === null ? '-' : bare(logKey(f.key)),
    quoted(`${f.method} ${f.uri} HTTP/1.1`),
    String(f.status),
    bare(f.errorCode),
    bare(f.bytesSent || null),
    bare(f.objectSize),
    bare(f.totalMs),
    bare(f.turnAroundMs),
    quoted(f.referer),
    quoted(f.userAgent),
    bare(f.versionId),
    bare(f.hostId),
    bare(f.sigVersion),
    bare(f.cipherSuite),
    bare(f.authType),
    bare(f.host),
    bare(f.tlsVersion),
    '-',
    f.aclRequired ? 'Yes' : '-',
  ].join(' ');
}
