/**
 * Multipart upload handlers: CreateMultipartUpload, UploadPart, UploadPartCopy,
 * CompleteMultipartUpload, AbortMultipartUpload.
 * Spec: S3 API reference of each. Part numbers 1..10000 (InvalidArgument); UploadPart needs a
 * known length and is EntityTooLarge above the part maximum; CompleteMultipartUpload takes the
 * parts list as XML (at most 10000 parts, MalformedXML otherwise), `If-None-Match: *` /
 * `If-Match`, and an optional whole-object `x-amz-checksum-*` to verify. The store enforces part
 * order, part existence, minimum part size and the checksum rules.
 */
import { requestObjectAcl } from './acl.ts';
import { withAcl } from '../model/acl.ts';
import type { CompletedPart } from '../model/object-store.ts';
import { readXmlBody } from './body.ts';
import { assertChecksumValue, checksumElement, parseChecksumAlgorithm, readContentMd5 } from '../model/checksums.ts';
import { readCustomerKeyHeaders, readSseRequest, sseResponseHeaders } from './sse-headers.ts';
import { checksumResponseHeaders, readChecksumHeader, readChecksumRequest, readMultipartChecksumSpec } from './checksum-headers.ts';
import type { S3Context } from './context.ts';
import { readCopySource } from './copy.ts';
import { S3Error } from '../model/errors.ts';
import { readMetadata, readWriteConditions } from './headers.ts';
import { withLockHeaders } from './object-lock.ts';
import { declaredLength } from './objects.ts';
import { parseCopySourceRange } from '../model/range.ts';
import { limitBody } from './request.ts';
import { withHeaderTags } from './tagging.ts';
import { el, xmlDocument, xmlResponse } from './xml.ts';
import { versionHeader } from './versioning.ts';
import { expirationHeaders } from './lifecycle.ts';
import { childText, childrenNamed, expectRoot, malformedXml, parseXml } from './xml-parse.ts';

const MAX_PARTS = 10_000;

function partNumber(query: URLSearchParams): number {
  const raw = query.get('partNumber') ?? '';
  const n = /^\d{1,5}$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= 1 && n <= MAX_PARTS)) {
    throw new S3Error('InvalidArgument', `Part number must be an integer between 1 and ${MAX_PARTS}, inclusive`, {
      ArgumentName: 'partNumber',
      ArgumentValue: raw,
    });
  }
  return n;
}

function uploadId(query: URLSearchParams): string {
  const id = query.get('uploadId');
  if (!id) throw new S3Error('NoSuchUpload', undefined, { UploadId: id ?? '' });
  return id;
}

export async function CreateMultipartUpload(s3: S3Context): Promise<Response> {
  const { headers } = s3;
  const checksum = readMultipartChecksumSpec(headers);
  const sse = readSseRequest(headers);
  const upload = await s3.store.createMultipartUpload(s3.bucket!, s3.key!, {
    metadata: withAcl(withLockHeaders(withHeaderTags(readMetadata(headers), headers), headers, s3.settings.maxRetentionDays), requestObjectAcl(s3)),
    checksum,
    sse,
  });
  const extra: Record<string, string> = {
    ...(checksum ? { 'x-amz-checksum-algorithm': checksum.algorithm, 'x-amz-checksum-type': checksum.type } : {}),
    ...sseResponseHeaders(upload.sse),
  };
  return xmlResponse(xmlDocument('InitiateMultipartUploadResult', el('Bucket', s3.bucket), el('Key', s3.key), el('UploadId', upload.uploadId)), extra);
}

export async function UploadPart(s3: S3Context): Promise<Response> {
  const { headers } = s3;
  const n = partNumber(s3.query);
  const contentLength = declaredLength(s3, s3.settings.maxPartSize);
  const sse = readCustomerKeyHeaders(headers);
  const options = { contentLength, contentMD5: readContentMd5(headers), checksum: readChecksumRequest(headers, s3.auth.checksum), sse };
  const body = limitBody(s3.auth.body, s3.settings.maxPartSize);
  const part = await s3.store.uploadPart(s3.bucket!, s3.key!, uploadId(s3.query), n, body, options);
  return new Response(null, { headers: { ETag: part.etag, ...checksumResponseHeaders(part.checksum, false), ...sseResponseHeaders(part.sse) } });
}

export async function UploadPartCopy(s3: S3Context): Promise<Response> {
  const { headers } = s3;
  const n = partNumber(s3.query);
  const source = { ...readCopySource(headers), range: parseCopySourceRange(headers.get('x-amz-copy-source-range')) };
  const part = await s3.store.uploadPartCopy(source, s3.bucket!, s3.key!, uploadId(s3.query), n, readCustomerKeyHeaders(headers));
  const checksum = part.checksum ? el(checksumElement(part.checksum.algorithm), part.checksum.value) : '';
  return xmlResponse(xmlDocument('CopyPartResult', el('ETag', part.etag), el('LastModified', part.lastModified), checksum), sseResponseHeaders(part.sse));
}

function readCompletedParts(xml: string): CompletedPart[] {
  const parts = childrenNamed(expectRoot(parseXml(xml), 'CompleteMultipartUpload'), 'Part');
  if (parts.length === 0 || parts.length > MAX_PARTS) throw malformedXml(`1 to ${MAX_PARTS} parts`);
  return parts.map((p) => {
    const number = childText(p, 'PartNumber')?.trim() ?? '';
    const etag = childText(p, 'ETag')?.trim();
    if (!/^\d{1,5}$/.test(number) || etag === undefined) throw malformedXml('<Part> needs <PartNumber> and <ETag>');
    const part: CompletedPart = { partNumber: Number(number), etag };
    for (const c of p.children) {
      if (!c.name.startsWith('Checksum') || c.name === 'ChecksumType') continue;
      const algorithm = parseChecksumAlgorithm(c.name.slice('Checksum'.length));
      part.checksum = { algorithm, value: assertChecksumValue(algorithm, c.text.trim(), 'document') };
    }
    return part;
  });
}

export async function CompleteMultipartUpload(s3: S3Context): Promise<Response> {
  const { headers } = s3;
  const id = uploadId(s3.query);
  const conditions = readWriteConditions(headers);
  const expectedChecksum = readChecksumHeader(headers, true);
  const sse = readCustomerKeyHeaders(headers);
  const parts = readCompletedParts(await readXmlBody(s3, { requireDigest: false }));
  const result = await s3.store.completeMultipartUpload(s3.bucket!, s3.key!, id, parts, { conditions, expectedChecksum, sse });
  const c = result.checksum;
  const location = new URL(s3.request.url).origin + `/${encodeURIComponent(s3.bucket!)}/${s3.key!.split('/').map(encodeURIComponent).join('/')}`;
  return xmlResponse(
    xmlDocument(
      'CompleteMultipartUploadResult',
      el('Location', location),
      el('Bucket', s3.bucket),
      el('Key', s3.key),
      el('ETag', result.etag),
      c ? el(checksumElement(c.algorithm), c.value) + el('ChecksumType', c.type) : '',
    ),
    { ...sseResponseHeaders(result.sse), ...versionHeader(result.versionId), ...expirationHeaders(result.expiration) },
  );
}

export async function AbortMultipartUpload(s3: S3Context): Promise<Response> {
  await s3.store.abortMultipartUpload(s3.bucket!, s3.key!, uploadId(s3.query));
  return new Response(null, { status: 204 });
}
