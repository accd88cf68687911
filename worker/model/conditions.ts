/**
 * Preconditions, evaluated by a store against the current object: reads (GET/HEAD, copy source)
 * and conditional writes (PutObject, CompleteMultipartUpload, CopyObject, DeleteObject).
 * Spec: RFC 9110 section 13.2.2 evaluation order, as S3 documents it for GetObject
 * (If-Match beats If-Unmodified-Since, If-None-Match beats If-Modified-Since) and S3 conditional
 * writes (If-None-Match: * -> 412 when present; If-Match -> 412 on mismatch, 404 when absent).
 * Dates compare at one-second resolution, like the Last-Modified header.
 * Conditional deletes: checkDeleteConditions (its comment says whose rules).
 */
import { S3Error } from './errors.ts';
import type { DeleteConditions, ReadConditions, WriteConditions } from './object-store.ts';

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
  return tag
    .trim()
    .replace(/^W\//, '')
    .replace(/^"(.*)"$/, '$1');
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

/** What a conditional delete is checked against: an object version, or a delete marker (version named). */
export type DeleteTarget = { kind: 'object'; etag: string; size: number; lastModified: Date } | { kind: 'marker' };

export const hasDeleteConditions = (c: DeleteConditions | undefined): c is DeleteConditions =>
  c !== undefined && (c.ifMatch !== undefined || c.lastModifiedTime !== undefined || c.size !== undefined);

/**
 * Conditional delete, checked by the catalog in the step that deletes (nothing in between).
 * Without a version id (`named` false), against the current version, as S3 general purpose
 * buckets do (measured: no current object, the key absent or a delete marker current, is 404
 * NoSuchKey whatever the condition, `*` included; a mismatch is 412). With one, against that
 * version (AWS answers 501 there; this is RGW's and ceph/s3-tests' semantics, and S3's for
 * directory buckets): a version that is gone passes (nothing to delete, no error, as an
 * unconditional delete of it: a version id never comes back with other content), a delete
 * marker holds no condition (no ETag, no size).
 * Every condition present must hold: If-Match (`*` matches any object), then the time, then
 * the size; the first that fails names itself in the error's Condition.
 */
export function checkDeleteConditions(target: DeleteTarget | undefined, cond: DeleteConditions | undefined, key: string, named: boolean): void {
  if (!hasDeleteConditions(cond)) return;
  if (!target) {
    if (named) return;
    throw new S3Error('NoSuchKey', undefined, { Key: key });
  }
  const failed = (condition: string) => new S3Error('PreconditionFailed', undefined, { Condition: condition });
  if (target.kind === 'marker')
    throw failed(cond.ifMatch !== undefined ? 'If-Match' : cond.lastModifiedTime !== undefined ? 'x-amz-if-match-last-modified-time' : 'x-amz-if-match-size');
  if (cond.ifMatch !== undefined && !etagMatches(cond.ifMatch, target.etag)) throw failed('If-Match');
  if (cond.lastModifiedTime !== undefined && seconds(target.lastModified) !== Math.floor(cond.lastModifiedTime / 1000))
    throw failed('x-amz-if-match-last-modified-time');
  if (cond.size !== undefined && target.size !== cond.size) throw failed('x-amz-if-match-size');
}
