/**
 * Versioning: PutBucketVersioning, GetBucketVersioning, ListObjectVersions, and the version id
 * of a request (`?versionId=`, `x-amz-copy-source: ...?versionId=`) and of a response
 * (x-amz-version-id, x-amz-delete-marker).
 * Spec: S3 PutBucketVersioning / GetBucketVersioning / ListObjectVersions. A bucket never
 * configured answers an empty VersioningConfiguration (what backup tools and `rclone purge`
 * expect); Status is Enabled or Suspended (anything else MalformedXML); MfaDelete Enabled is
 * refused (NotImplemented: no MFA devices here). The choices where S3 is loose are in
 * docs/COMPATIBILITY.md, "Versioning".
 */
import { DEFAULT_ACCOUNT } from '../model/account.ts';
import { S3Error } from '../model/errors.ts';
import type { ListVersionsResult, VersioningStatus } from '../model/object-store.ts';
import { readXmlBody } from './body.ts';
import type { S3Context } from './context.ts';
import { intParam, listingParams } from './listing.ts';
import { el, group, ownerXml, xmlDocument, xmlResponse } from './xml.ts';
import { childText, expectRoot, malformedXml, parseXml } from './xml-parse.ts';

/** Version ids this gateway gives (format/ids.ts newId: 28 hex digits), or S3's 'null'. */
const VERSION_ID = /^(null|[0-9a-f]{28})$/;

/** A version id as a request names it; InvalidArgument for one this gateway never gave. */
export function checkVersionId(value: string, argument = 'versionId'): string {
  if (value === '') throw new S3Error('InvalidArgument', 'Version id cannot be the empty string', { ArgumentName: argument, ArgumentValue: value });
  if (!VERSION_ID.test(value)) throw new S3Error('InvalidArgument', 'Invalid version id specified', { ArgumentName: argument, ArgumentValue: value });
  return value;
}

/** `?versionId=` of the request, checked; undefined when absent. */
export function readVersionId(query: URLSearchParams): string | undefined {
  const value = query.get('versionId');
  return value === null ? undefined : checkVersionId(value);
}

/** x-amz-version-id when the store named a version. */
export const versionHeader = (versionId: string | undefined): Record<string, string> => (versionId === undefined ? {} : { 'x-amz-version-id': versionId });

export async function GetBucketVersioning(s3: S3Context): Promise<Response> {
  const status = await s3.config.getBucketVersioning(s3.bucket!);
  return xmlResponse(xmlDocument('VersioningConfiguration', status ? el('Status', status) : ''));
}

export async function PutBucketVersioning(s3: S3Context): Promise<Response> {
  const root = expectRoot(parseXml(await readXmlBody(s3, { requireDigest: false })), 'VersioningConfiguration');
  const mfa = childText(root, 'MfaDelete')?.trim();
  if (mfa !== undefined && mfa !== 'Disabled' && mfa !== 'Enabled') throw malformedXml('MfaDelete is Enabled or Disabled');
  if (mfa === 'Enabled') throw new S3Error('NotImplemented', 'MFA Delete is not supported by this gateway: leave MfaDelete out or Disabled.');
  const status = childText(root, 'Status')?.trim();
  if (status === undefined) {
    await s3.store.headBucket(s3.bucket!); // no Status: nothing changes (NoSuchBucket still answered)
    return new Response(null);
  }
  if (status !== 'Enabled' && status !== 'Suspended') throw malformedXml('Status is Enabled or Suspended');
  await s3.config.putBucketVersioning(s3.bucket!, status satisfies VersioningStatus);
  return new Response(null);
}

function entriesXml(page: ListVersionsResult, enc: (s: string) => string, owner: string): string[] {
  const entries = page.versions.map((v) => {
    const head = [el('Key', enc(v.key)), el('VersionId', v.versionId), el('IsLatest', v.isLatest), el('LastModified', v.lastModified)];
    if (!v.object) return group('DeleteMarker', ...head, ownerXml('Owner', owner));
    const { etag, size, checksum, storageClass } = v.object;
    return group(
      'Version',
      ...head,
      el('ETag', etag),
      el('Size', size),
      ownerXml('Owner', owner),
      el('StorageClass', storageClass ?? 'STANDARD'),
      checksum ? el('ChecksumAlgorithm', checksum.algorithm) + el('ChecksumType', checksum.type) : '',
    );
  });
  return [...entries, ...page.commonPrefixes.map((p) => group('CommonPrefixes', el('Prefix', enc(p))))];
}

export async function ListObjectVersions(s3: S3Context): Promise<Response> {
  const q = s3.query;
  const { url, enc, prefix, delimiter } = listingParams(q);
  const maxKeys = intParam(q, 'max-keys', 1000, 1000);
  const keyMarker = q.get('key-marker') || null;
  const rawVersionMarker = q.get('version-id-marker') || null;
  if (rawVersionMarker !== null && keyMarker === null) {
    throw new S3Error('InvalidArgument', 'A version-id marker cannot be specified without a key marker.', {
      ArgumentName: 'version-id-marker',
      ArgumentValue: rawVersionMarker,
    });
  }
  const versionIdMarker = rawVersionMarker === null ? null : checkVersionId(rawVersionMarker, 'version-id-marker');
  const page = await s3.store.listObjectVersions(s3.bucket!, { prefix, delimiter, keyMarker, versionIdMarker, maxKeys });
  return xmlResponse(
    xmlDocument(
      'ListVersionsResult',
      el('Name', s3.bucket),
      el('Prefix', enc(prefix)),
      el('KeyMarker', enc(keyMarker ?? '')),
      el('VersionIdMarker', versionIdMarker ?? ''),
      page.nextKeyMarker !== null ? el('NextKeyMarker', enc(page.nextKeyMarker)) : '',
      page.nextVersionIdMarker !== null ? el('NextVersionIdMarker', page.nextVersionIdMarker) : '',
      el('MaxKeys', maxKeys),
      delimiter !== null ? el('Delimiter', enc(delimiter)) : '',
      el('IsTruncated', page.isTruncated),
      url ? el('EncodingType', 'url') : '',
      ...entriesXml(page, enc, s3.bucketOwner ?? DEFAULT_ACCOUNT),
    ),
  );
}
