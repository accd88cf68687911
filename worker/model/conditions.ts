/**
 * Preconditions, evaluated by a store against the current object: reads (GET/HEAD, copy source)
 * and conditional writes (PutObject, CompleteMultipartUpload, CopyObject, DeleteObject).
 * Spec: RFC 9110 section 13.2.2 evaluation order, as S3 documents it for GetObject
 * (If-Match beats If-Unmodified-Since, If-None-Match beats If-Modified-Since) and S3 conditional
 * writes (If-None-Match: * -> 412 when present; If-Match -> 412 on mismatch, 404 when absent).
 * Dates compare at one-second resolution, like the Last-Modified header.
 */
import { S3Error } from './errors.ts';
import type { ReadConditions, WriteConditions } from './object-store.ts';

interface Current {
  etag: string;
  lastModified: Date;
}

/** True when `header` (a list of entity tags or `*`) matches `etag`. */
export function etagMatches(header: string, etag: string): boolean {
  const want = normalizeEtag(etag);
  return header.split(',').some((t) => {
    const tag = t.trim();
    return tag === '*' || normalizeEtag(tag) === want;
  });
}

function normalizeEtag(tag: string): string {
  return tag.trim().replace(/^W\//, '').replace(/^"(.*)"$/, '$1');
}

const seconds = (d: Date) => Math.floor(d.getTime() / 1000);

/** Throws PreconditionFailed (412) or NotModified (304, or 412 for a copy source). */
export function checkReadConditions(obj: Current, cond: ReadConditions, forCopySource = false): void {
  const headers = { ETag: obj.etag, 'Last-Modified': obj.lastModified.toUTCString() };
  const failed = () => new S3Error('PreconditionFailed', undefined, { Condition: 'If-Match' }).withHeaders(headers);
  if (cond.ifMatch !== undefined) {
    if (!etagMatches(cond.ifMatch, obj.etag)) throw failed();
  } else if (cond.ifUnmodifiedSince && seconds(obj.lastModified) > seconds(cond.ifUnmodifiedSince)) {
    throw new S3Error('PreconditionFailed', undefined, { Condition: 'If-Unmodified-Since' }).withHeaders(headers);
  }
  const notModified = (condition: string) =>
    forCopySource
      ? new S3Error('PreconditionFailed', undefined, { Condition: condition }).withHeaders(headers)
      : new S3Error('NotModified').withHeaders(headers);
  if (cond.ifNoneMatch !== undefined) {
    if (etagMatches(cond.ifNoneMatch, obj.etag)) throw notModified('If-None-Match');
  } else if (cond.ifModifiedSince && seconds(obj.lastModified) <= seconds(cond.ifModifiedSince)) {
    throw notModified('If-Modified-Since');
  }
}

/** Conditional write against the object currently visible (undefined when there is none). */
export function checkWriteConditions(current: Current | undefined, cond: WriteConditions, key: string): void {
  if (cond.ifNoneMatch === '*' && current) {
    throw new S3Error('PreconditionFailed', undefined, { Condition: 'If-None-Match' });
  }
  if (cond.ifMatch !== undefined) {
    if (!current) throw new S3Error('NoSuchKey', undefined, { Key: key });
    if (!etagMatches(cond.ifMatch, current.etag)) {
      throw new S3Error('PreconditionFailed', undefined, { Condition: 'If-Match' });
    }
  }
}
