/**
 * ListParts and ListMultipartUploads.
 * Spec: S3 ListParts (max-parts default and cap 1000, part-number-marker, NextPartNumberMarker)
 * and ListMultipartUploads (prefix, delimiter, key-marker, upload-id-marker, max-uploads default
 * and cap 1000, encoding-type=url).
 */
import { checksumElement } from '../model/checksums.ts';
import type { S3Context } from './context.ts';
import { intParam, listingParams } from './listing.ts';
import { el, group, ownerXml, xmlDocument, xmlResponse } from './xml.ts';

export async function ListParts(s3: S3Context): Promise<Response> {
  const maxParts = intParam(s3.query, 'max-parts', 1000, 1000);
  const partNumberMarker = intParam(s3.query, 'part-number-marker', 0);
  const uploadId = s3.query.get('uploadId')!;
  const page = await s3.store.listParts(s3.bucket!, s3.key!, uploadId, { partNumberMarker, maxParts });
  const spec = page.upload.checksum;
  const parts = page.parts.map((p) =>
    group(
      'Part',
      el('PartNumber', p.partNumber),
      el('LastModified', p.lastModified),
      el('ETag', p.etag),
      el('Size', p.size),
      p.checksum ? el(checksumElement(p.checksum.algorithm), p.checksum.value) : '',
    ),
  );
  return xmlResponse(
    xmlDocument(
      'ListPartsResult',
      el('Bucket', s3.bucket),
      el('Key', s3.key),
      el('UploadId', uploadId),
      el('PartNumberMarker', partNumberMarker),
      page.nextPartNumberMarker !== null ? el('NextPartNumberMarker', page.nextPartNumberMarker) : '',
      el('MaxParts', maxParts),
      el('IsTruncated', page.isTruncated),
      ownerXml('Initiator', page.upload.owner ?? s3.bucketOwner),
      ownerXml('Owner', page.upload.owner ?? s3.bucketOwner),
      el('StorageClass', page.upload.storageClass ?? 'STANDARD'),
      spec ? el('ChecksumAlgorithm', spec.algorithm) + el('ChecksumType', spec.type) : '',
      ...parts,
    ),
  );
}

export async function ListMultipartUploads(s3: S3Context): Promise<Response> {
  const q = s3.query;
  const { url, enc, prefix, delimiter } = listingParams(q);
  const keyMarker = q.get('key-marker') || null;
  const uploadIdMarker = q.get('upload-id-marker') || null;
  const maxUploads = intParam(q, 'max-uploads', 1000, 1000);
  const page = await s3.store.listMultipartUploads(s3.bucket!, { prefix, delimiter, keyMarker, uploadIdMarker, maxUploads });
  const uploads = page.uploads.map((u) =>
    group(
      'Upload',
      el('Key', enc(u.key)),
      el('UploadId', u.uploadId),
      ownerXml('Initiator', u.owner ?? s3.bucketOwner),
      ownerXml('Owner', u.owner ?? s3.bucketOwner),
      el('StorageClass', u.storageClass ?? 'STANDARD'),
      el('Initiated', u.initiated),
      u.checksum ? el('ChecksumAlgorithm', u.checksum.algorithm) + el('ChecksumType', u.checksum.type) : '',
    ),
  );
  const prefixes = page.commonPrefixes.map((p) => group('CommonPrefixes', el('Prefix', enc(p))));
  return xmlResponse(
    xmlDocument(
      'ListMultipartUploadsResult',
      el('Bucket', s3.bucket),
      el('KeyMarker', enc(keyMarker ?? '')),
      el('UploadIdMarker', uploadIdMarker ?? ''),
      page.isTruncated ? el('NextKeyMarker', enc(page.nextKeyMarker ?? '')) + el('NextUploadIdMarker', page.nextUploadIdMarker ?? '') : '',
      el('Prefix', enc(prefix)),
      delimiter !== null ? el('Delimiter', enc(delimiter)) : '',
      el('MaxUploads', maxUploads),
      el('IsTruncated', page.isTruncated),
      url ? el('EncodingType', 'url') : '',
      ...uploads,
      ...prefixes,
    ),
  );
}
