/**
 * ListObjectsV2 and ListObjects (v1).
 * Spec: S3 ListObjectsV2 / ListObjects. max-keys 0..1000 (default and cap 1000; keys and common
 * prefixes share it; 0 returns an empty, untruncated page); any-string delimiter;
 * encoding-type=url encodes Key, Prefix, Delimiter, StartAfter, Marker, NextMarker and common
 * prefixes. V2: opaque continuation tokens (the resume point, so a page boundary never repeats a
 * common prefix), start-after, fetch-owner, KeyCount. V1: Marker; NextMarker only when a
 * delimiter was given and the page is truncated (clients otherwise resume from the last Key).
 * V1 echoes Prefix as sent even with encoding-type=url (S3 encodes only Delimiter, Marker,
 * NextMarker and the keys and common prefixes there: botocore, which adds encoding-type=url on
 * its own, decodes exactly those, so an encoded Prefix would reach the caller as `%0A`).
 * `allow-unordered=true` (Ceph RGW's extension, both versions): the answer may come in any order,
 * so the ordered one is an answer; with a delimiter it is 400 InvalidArgument, as RGW answers
 * (common prefixes need order).
 */
import { DEFAULT_ACCOUNT } from '../model/account.ts';
import type { ListObjectsResult } from '../model/object-store.ts';
import type { S3Context } from './context.ts';
import { S3Error } from '../model/errors.ts';
import { el, group, ownerXml, urlEncodeIf, xmlDocument, xmlResponse } from './xml.ts';

/** A non-negative integer query parameter, capped; InvalidArgument otherwise. */
export function intParam(query: URLSearchParams, name: string, fallback: number, cap = Number.MAX_SAFE_INTEGER): number {
  const raw = query.get(name);
  if (raw === null || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(Number(raw))) {
    throw new S3Error('InvalidArgument', `Provided ${name} not an integer or within integer range`, { ArgumentName: name, ArgumentValue: raw });
  }
  return Math.min(Number(raw), cap);
}

/**
 * What every listing reads first: encoding-type (`url`, or InvalidArgument), with `enc` applying
 * it to a key-like value, prefix and delimiter (an empty delimiter is none).
 */
export function listingParams(query: URLSearchParams): { url: boolean; enc: (s: string) => string; prefix: string; delimiter: string | null } {
  const value = query.get('encoding-type');
  if (value !== null && value.toLowerCase() !== 'url') {
    throw new S3Error('InvalidArgument', 'Invalid Encoding Method specified in Request', { ArgumentName: 'encoding-type', ArgumentValue: value });
  }
  const url = value !== null;
  return { url, enc: (s) => urlEncodeIf(url, s), prefix: query.get('prefix') ?? '', delimiter: query.get('delimiter') || null };
}

/** RGW's `allow-unordered=true` with a delimiter: InvalidArgument (alone it changes nothing here). */
function refuseUnorderedDelimiter(query: URLSearchParams, delimiter: string | null): void {
  if (delimiter !== null && query.get('allow-unordered')?.toLowerCase() === 'true') {
    throw new S3Error('InvalidArgument', 'allow-unordered cannot be used with a delimiter', { ArgumentName: 'allow-unordered', ArgumentValue: 'true' });
  }
}

/** `owner`: the bucket's account (model/account.ts), every object's owner (ACLs disabled); null: no Owner elements. */
function contentsXml(page: ListObjectsResult, enc: (s: string) => string, owner: string | null): string[] {
  const contents = page.objects.map((o) =>
    group(
      'Contents',
      el('Key', enc(o.key)),
      el('LastModified', o.lastModified),
      el('ETag', o.etag),
      o.checksum ? el('ChecksumAlgorithm', o.checksum.algorithm) + el('ChecksumType', o.checksum.type) : '',
      el('Size', o.size),
      owner !== null ? ownerXml('Owner', owner) : '',
      el('StorageClass', o.storageClass ?? 'STANDARD'),
    ),
  );
  const prefixes = page.commonPrefixes.map((p) => group('CommonPrefixes', el('Prefix', enc(p))));
  return [...contents, ...prefixes];
}

const TOKEN_PREFIX = 'sg1:';

function encodeToken(resumeAfter: string): string {
  const bytes = new TextEncoder().encode(TOKEN_PREFIX + resumeAfter);
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
}

function decodeToken(token: string): string {
  try {
    const bin = atob(token.replace(/-/g, '+').replace(/_/g, '/'));
    const text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
    if (text.startsWith(TOKEN_PREFIX)) return text.slice(TOKEN_PREFIX.length);
  } catch {
    // fall through
  }
  throw new S3Error('InvalidArgument', 'The continuation token provided is incorrect', { ArgumentName: 'continuation-token', ArgumentValue: token });
}

export async function ListObjectsV2(s3: S3Context): Promise<Response> {
  const q = s3.query;
  const { url, enc, prefix, delimiter } = listingParams(q);
  refuseUnorderedDelimiter(q, delimiter);
  const maxKeys = intParam(q, 'max-keys', 1000, 1000);
  const token = q.get('continuation-token');
  const startAfter = q.get('start-after');
  // An empty token (`continuation-token=`) is no token: list from the start (or StartAfter), and
  // echo it, as S3 does.
  const resume = token ? decodeToken(token) : startAfter || null;
  const page = await s3.store.listObjects(s3.bucket!, { prefix, delimiter, startAfter: resume, maxKeys });
  return xmlResponse(
    xmlDocument(
      'ListBucketResult',
      el('Name', s3.bucket),
      el('Prefix', enc(prefix)),
      delimiter !== null ? el('Delimiter', enc(delimiter)) : '',
      el('MaxKeys', maxKeys),
      el('KeyCount', page.objects.length + page.commonPrefixes.length),
      el('IsTruncated', page.isTruncated),
      url ? el('EncodingType', 'url') : '',
      token !== null ? el('ContinuationToken', token) : '',
      page.isTruncated && page.lastEntry !== null ? el('NextContinuationToken', encodeToken(page.lastEntry)) : '',
      startAfter !== null ? el('StartAfter', enc(startAfter)) : '',
      ...contentsXml(page, enc, q.get('fetch-owner') === 'true' ? (s3.bucketOwner ?? DEFAULT_ACCOUNT) : null),
    ),
  );
}

export async function ListObjects(s3: S3Context): Promise<Response> {
  const q = s3.query;
  const { url, enc, prefix, delimiter } = listingParams(q);
  refuseUnorderedDelimiter(q, delimiter);
  const maxKeys = intParam(q, 'max-keys', 1000, 1000);
  const marker = q.get('marker') ?? '';
  const page = await s3.store.listObjects(s3.bucket!, { prefix, delimiter, startAfter: marker || null, maxKeys });
  return xmlResponse(
    xmlDocument(
      'ListBucketResult',
      el('Name', s3.bucket),
      el('Prefix', prefix),
      el('Marker', enc(marker)),
      delimiter !== null && page.isTruncated && page.lastEntry !== null ? el('NextMarker', enc(page.lastEntry)) : '',
      el('MaxKeys', maxKeys),
      delimiter !== null ? el('Delimiter', enc(delimiter)) : '',
      el('IsTruncated', page.isTruncated),
      url ? el('EncodingType', 'url') : '',
      ...contentsXml(page, enc, s3.bucketOwner ?? DEFAULT_ACCOUNT),
    ),
  );
}
