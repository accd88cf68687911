/**
 * GetObjectAttributes: what checksum-verifying clients read instead of the object: ETag (without
 * quotes), Checksum (the stored value and its type; a COMPOSITE one keeps its "-N"), ObjectParts
 * (multipart objects only: PartsCount, a page of parts with their size and own checksum, paged
 * by `x-amz-max-parts` (default and cap 1000) and `x-amz-part-number-marker`), StorageClass
 * (always STANDARD) and ObjectSize, each only when named in `x-amz-object-attributes`.
 * Never opens object data. Read preconditions (If-Match...) apply as to HeadObject.
 * Spec: S3 GetObjectAttributes. An unknown attribute name is InvalidArgument; none is
 * InvalidRequest.
 */
import { checksumElement } from '../model/checksums.ts';
import { S3Error } from '../model/errors.ts';
import type { ObjectChecksum } from '../model/object-store.ts';
import type { S3Context } from './context.ts';
import { readReadConditions } from './headers.ts';
import { readVersionId, versionHeader } from './versioning.ts';
import { el, group, xmlDocument, xmlResponse } from './xml.ts';
import { readCustomerKeyHeaders } from './sse-headers.ts';

const ATTRIBUTES = ['ETag', 'Checksum', 'ObjectParts', 'StorageClass', 'ObjectSize'] as const;
type Attribute = (typeof ATTRIBUTES)[number];
const MAX_PARTS = 1000;

function readAttributes(headers: Headers): Set<Attribute> {
  const names = (headers.get('x-amz-object-attributes') ?? '')
    .split(',')
    .map((a) => a.trim())
    .filter(Boolean);
  if (names.length === 0)
    throw new S3Error('InvalidRequest', 'The x-amz-object-attributes header specifying the attributes to be retrieved is either missing or empty');
  for (const n of names) {
    if (!(ATTRIBUTES as readonly string[]).includes(n))
      throw new S3Error('InvalidArgument', 'Invalid attribute name specified.', { ArgumentName: 'x-amz-object-attributes', ArgumentValue: n });
  }
  return new Set(names as Attribute[]);
}

function headerInt(headers: Headers, name: string, fallback: number): number {
  const raw = headers.get(name);
  if (raw === null || raw.trim() === '') return fallback;
  if (!/^\d{1,9}$/.test(raw.trim()))
    throw new S3Error('InvalidArgument', `Provided ${name} not an integer or within integer range`, { ArgumentName: name, ArgumentValue: raw });
  return Number(raw.trim());
}

const checksumValue = (c: ObjectChecksum | null) => (c ? el(checksumElement(c.algorithm), c.value) : '');

export async function GetObjectAttributes(s3: S3Context): Promise<Response> {
  const { headers } = s3;
  const wanted = readAttributes(headers);
  const maxParts = Math.min(headerInt(headers, 'x-amz-max-parts', MAX_PARTS), MAX_PARTS);
  const marker = headerInt(headers, 'x-amz-part-number-marker', 0);
  const { head, parts } = await s3.store.headObjectParts(
    s3.bucket!,
    s3.key!,
    readReadConditions(headers),
    readCustomerKeyHeaders(headers),
    readVersionId(s3.query),
  );
  const out: string[] = [];
  if (wanted.has('ETag')) out.push(el('ETag', head.etag.replace(/"/g, '')));
  if (wanted.has('Checksum') && head.checksum) out.push(group('Checksum', checksumValue(head.checksum), el('ChecksumType', head.checksum.type)));
  if (wanted.has('ObjectParts') && parts) {
    const after = parts.filter((p) => p.partNumber > marker);
    const page = after.slice(0, maxParts);
    const truncated = after.length > page.length;
    out.push(
      group(
        'ObjectParts',
        el('PartsCount', parts.length),
        el('PartNumberMarker', marker),
        el('NextPartNumberMarker', page.length ? page[page.length - 1]!.partNumber : marker),
        el('MaxParts', maxParts),
        el('IsTruncated', truncated),
        ...page.map((p) => group('Part', checksumValue(p.checksum), el('PartNumber', p.partNumber), el('Size', p.size))),
      ),
    );
  }
  if (wanted.has('StorageClass')) out.push(el('StorageClass', head.metadata.storageClass ?? 'STANDARD'));
  if (wanted.has('ObjectSize')) out.push(el('ObjectSize', head.size));
  return xmlResponse(xmlDocument('GetObjectAttributesResponse', ...out), {
    'Last-Modified': head.lastModified.toUTCString(),
    ...versionHeader(head.versionId),
  });
}
