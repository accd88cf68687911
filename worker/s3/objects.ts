/**
 * Object handlers: PutObject, GetObject, HeadObject, DeleteObject.
 * Spec: S3 API reference of each. PutObject needs a known length (MissingContentLength) and is
 * EntityTooLarge above the configured maximum before anything is read; the store hashes,
 * verifies (Content-MD5, x-amz-checksum-*) and commits atomically with the conditions.
 * GetObject/HeadObject: Range -> 206 + Content-Range; `partNumber=N` -> 206 with that part's
 * bytes, Content-Range and `x-amz-mp-parts-count` (a Range as well is InvalidRequest; a bad
 * number InvalidArgument; past the last part 416 InvalidPartNumber); checksums only with
 * `x-amz-checksum-mode: ENABLED`, never for a Range; for a part, the part's own checksum with
 * the object's checksum type (the bytes served are the part's, so a client can verify them).
 * HeadObject never opens object data. `versionId` reads (or DeleteObject removes) one version;
 * DeleteObject's conditions: delete-conditions.ts;
 * x-amz-version-id and x-amz-delete-marker answer as versioning.ts says.
 * Both carry the sandbox headers of served-object.ts (no object runs as a page of our origin).
 */
import { requestObjectAcl } from './acl.ts';
import { withAcl } from '../model/acl.ts';
import { S3Error } from '../model/errors.ts';
import type { ObjectHead } from '../model/object-store.ts';
import type { S3Context } from './context.ts';
import { readContentMd5 } from '../model/checksums.ts';
import { checksumResponseHeaders, readChecksumRequest } from './checksum-headers.ts';
import { objectHeaders, readMetadata, readReadConditions, readWriteConditions } from './headers.ts';
import { parseRange } from '../model/range.ts';
import { limitBody, tooLarge } from './request.ts';
import { responseBody } from './response-body.ts';
import { addServedObjectHeaders } from './served-object.ts';
import { withHeaderTags } from './tagging.ts';
import { readCustomerKeyHeaders, readSseRequest, sseResponseHeaders } from './sse-headers.ts';
import { readVersionId, versionHeader } from './versioning.ts';
import { assertLockedPutDigest, readBypass, withLockHeaders } from './object-lock.ts';
import { expirationHeaders } from './lifecycle.ts';
import { readDeleteConditions } from './delete-conditions.ts';

/** Declared body length, checked against `max` before anything is read. */
export function declaredLength(s3: S3Context, max: number): number {
  const length = s3.auth.decodedContentLength;
  if (length === null) throw new S3Error('MissingContentLength');
  if (length > max) throw tooLarge(length, max);
  return length;
}

export async function PutObject(s3: S3Context): Promise<Response> {
  const { headers } = s3;
  const contentLength = declaredLength(s3, s3.settings.maxObjectSize);
  const metadata = withAcl(withLockHeaders(withHeaderTags(readMetadata(headers), headers), headers, s3.settings.maxRetentionDays), requestObjectAcl(s3));
  assertLockedPutDigest(s3, metadata);
  const options = {
    contentLength,
    contentMD5: readContentMd5(headers),
    metadata,
    checksum: readChecksumRequest(headers, s3.auth.checksum),
    conditions: readWriteConditions(headers),
    sse: readSseRequest(headers),
  };
  const body = limitBody(s3.auth.body, s3.settings.maxObjectSize);
  // x-amz-expiration comes from the commit itself (the catalog judges the rules there): no call more.
  const result = await s3.store.putObject(s3.bucket!, s3.key!, body, options);
  return new Response(null, {
    headers: {
      ETag: result.etag,
      ...checksumResponseHeaders(result.checksum),
      ...sseResponseHeaders(result.sse),
      ...versionHeader(result.versionId),
      ...expirationHeaders(result.expiration),
    },
  });
}

function readOptions(s3: S3Context) {
  const { headers } = s3;
  const raw = s3.query.get('partNumber');
  let partNumber: number | null = null;
  if (raw !== null) {
    partNumber = /^\d{1,5}$/.test(raw) ? Number(raw) : NaN;
    if (!(partNumber >= 1 && partNumber <= 10_000)) {
      throw new S3Error('InvalidArgument', 'Part number must be an integer between 1 and 10000, inclusive', { ArgumentName: 'partNumber', ArgumentValue: raw });
    }
    if (headers.has('range')) throw new S3Error('InvalidRequest', 'Cannot specify both Range header and partNumber query parameter');
  }
  // SSE-S3 and SSE-KMS are named on writes only; a read that names them is refused, as S3 does.
  if (headers.has('x-amz-server-side-encryption')) {
    throw new S3Error('InvalidArgument', 'The x-amz-server-side-encryption header is not supported for this operation.', {
      ArgumentName: 'x-amz-server-side-encryption',
    });
  }
  const versionId = readVersionId(s3.query);
  return {
    range: parseRange(headers.get('range')),
    partNumber,
    conditions: readReadConditions(headers),
    sse: readCustomerKeyHeaders(headers),
    ...(versionId === undefined ? {} : { versionId }),
  };
}

/** Response headers of a read, with the parts count when a part was asked for. */
function readHeaders(s3: S3Context, head: ObjectHead): Headers {
  const headers = objectHeaders(head, { checksumMode: checksumMode(s3), query: s3.query });
  if (s3.query.has('partNumber') && head.partsCount) headers.set('x-amz-mp-parts-count', String(head.partsCount));
  if (head.versionId !== undefined) headers.set('x-amz-version-id', head.versionId);
  for (const [name, value] of Object.entries(expirationHeaders(head.expiration))) headers.set(name, value);
  addServedObjectHeaders(headers);
  return headers;
}

function checksumMode(s3: S3Context): boolean {
  const mode = s3.headers.get('x-amz-checksum-mode');
  return mode?.toUpperCase() === 'ENABLED';
}

export async function HeadObject(s3: S3Context): Promise<Response> {
  const head = await s3.store.headObject(s3.bucket!, s3.key!, readOptions(s3));
  return new Response(null, { status: head.range ? 206 : 200, headers: readHeaders(s3, head) });
}

export async function GetObject(s3: S3Context): Promise<Response> {
  const obj = await s3.store.getObject(s3.bucket!, s3.key!, readOptions(s3));
  const headers = readHeaders(s3, obj);
  const body = responseBody(obj.body, Number(headers.get('Content-Length')), s3.scope);
  // 'manual': stored bytes go out as they are, even under a stored Content-Encoding (gzip...).
  return new Response(body, { status: obj.range ? 206 : 200, headers, encodeBody: 'manual' });
}

export async function DeleteObject(s3: S3Context): Promise<Response> {
  const conditions = readDeleteConditions(s3.headers);
  const versionId = readVersionId(s3.query);
  const result = await s3.store.deleteObject(s3.bucket!, s3.key!, {
    conditions,
    ...(versionId === undefined ? {} : { versionId }),
    bypassGovernance: readBypass(s3),
  });
  const headers = { ...versionHeader(result.versionId), ...(result.deleteMarker ? { 'x-amz-delete-marker': 'true' } : {}) };
  return new Response(null, { status: 204, headers });
}
