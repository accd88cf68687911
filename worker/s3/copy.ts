/**
 * CopyObject, and the copy source shared with UploadPartCopy.
 * Spec: S3 CopyObject: `x-amz-copy-source: [/]bucket/key[?versionId=id]` (URL-encoded; a named
 * version is copied and named back in x-amz-copy-source-version-id), `x-amz-copy-source-if-*` (any failure is 412),
 * `x-amz-metadata-directive: COPY|REPLACE`, `x-amz-tagging-directive: COPY|REPLACE` (tagging.ts); copying an object onto itself needs REPLACE (or a new
 * checksum algorithm), else InvalidRequest. Result: CopyObjectResult XML.
 */
import { requestObjectAcl } from './acl.ts';
import type { CopySource } from '../model/object-store.ts';
import { checksumElement, parseChecksumAlgorithm } from '../model/checksums.ts';
import type { S3Context } from './context.ts';
import { S3Error } from '../model/errors.ts';
import { readMetadata, readReadConditions, readWriteConditions } from './headers.ts';
import { readLockHeaders } from './object-lock.ts';
import { percentDecode, validateKey } from './request.ts';
import { readTaggingDirective } from './tagging.ts';
import { el, xmlDocument, xmlResponse } from './xml.ts';
import { readCustomerKeyHeaders, readSseRequest, sseResponseHeaders } from './sse-headers.ts';
import { readVersionId, versionHeader } from './versioning.ts';
import { expirationHeaders } from './lifecycle.ts';

export function readCopySource(headers: Headers): CopySource {
  const raw = headers.get('x-amz-copy-source')!;
  const q = raw.indexOf('?');
  const path = (q < 0 ? raw : raw.slice(0, q)).replace(/^\//, '');
  const versionId = q >= 0 ? readVersionId(new URLSearchParams(raw.slice(q + 1))) : undefined;
  const slash = path.indexOf('/');
  if (slash <= 0 || slash === path.length - 1) {
    throw new S3Error('InvalidArgument', 'Copy Source must mention the source bucket and key: sourcebucket/sourcekey', {
      ArgumentName: 'x-amz-copy-source',
      ArgumentValue: raw,
    });
  }
  return {
    bucket: percentDecode(path.slice(0, slash)),
    key: validateKey(percentDecode(path.slice(slash + 1))),
    conditions: readReadConditions(headers, 'x-amz-copy-source-'),
    sse: readCustomerKeyHeaders(headers, true),
    ...(versionId === undefined ? {} : { versionId }),
  };
}

export async function CopyObject(s3: S3Context): Promise<Response> {
  const { headers } = s3;
  const source = readCopySource(headers);
  const directive = (headers.get('x-amz-metadata-directive') ?? 'COPY').toUpperCase();
  if (directive !== 'COPY' && directive !== 'REPLACE') {
    throw new S3Error('InvalidArgument', 'Unknown metadata directive.', { ArgumentName: 'x-amz-metadata-directive', ArgumentValue: directive });
  }
  const algHeader = headers.get('x-amz-checksum-algorithm');
  const checksumAlgorithm = algHeader ? parseChecksumAlgorithm(algHeader) : null;
  const sse = readSseRequest(headers);
  // A named version copied onto its own key restores it (S3 allows it: the copy is a new version);
  // one copied onto itself with a storage class is rewritten under that class's policy (issue 44).
  const storageClass = headers.get('x-amz-storage-class');
  if (
    source.bucket === s3.bucket &&
    source.key === s3.key &&
    source.versionId === undefined &&
    directive === 'COPY' &&
    !checksumAlgorithm &&
    !sse &&
    storageClass === null
  ) {
    throw new S3Error(
      'InvalidRequest',
      "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.",
    );
  }
  const result = await s3.store.copyObject(source, s3.bucket!, s3.key!, {
    metadataDirective: directive,
    metadata: directive === 'REPLACE' ? readMetadata(headers) : undefined,
    tagging: readTaggingDirective(headers),
    checksumAlgorithm,
    conditions: readWriteConditions(headers),
    sse,
    objectLock: readLockHeaders(headers, s3.settings.maxRetentionDays),
    ...(storageClass !== null && storageClass !== 'STANDARD' ? { storageClass } : {}),
    acl: requestObjectAcl(s3),
  });
  const checksum = result.checksum;
  return xmlResponse(
    xmlDocument(
      'CopyObjectResult',
      el('ETag', result.etag),
      el('LastModified', result.lastModified),
      checksum ? el('ChecksumType', checksum.type) + el(checksumElement(checksum.algorithm), checksum.value) : '',
    ),
    {
      ...sseResponseHeaders(result.sse),
      ...versionHeader(result.versionId),
      ...expirationHeaders(result.expiration),
      ...(result.sourceVersionId === undefined ? {} : { 'x-amz-copy-source-version-id': result.sourceVersionId }),
    },
  );
}
