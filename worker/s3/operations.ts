/**
 * Operation detection: method + bucket/key presence + query flags -> the S3 operation, named
 * exactly as AWS names it. Each operation lists the query parameters it understands; any other
 * parameter of S3's API (a subresource such as ?policy on a PUT, or ?versionId on a PutObject)
 * and any header asking for a feature we lack (website redirects, append writes, non-STANDARD storage class, ...) is
 * NotImplemented, never a wrong success. A parameter that is not S3's (`?v=3` a web page adds to
 * bust its cache, the `bucket`, `key` and `etag` a POST form's success redirect appends) is
 * ignored, as S3 ignores it: it asks for nothing. A canned ACL other than the owner's or a grant header
 * is AccessControlListNotSupported (acl-headers.ts), as on an S3 bucket with ACLs disabled; a public
 * one only after the gate (app.ts), whose public access block check may refuse it with 403 first. Reads of
 * configurations never held are answered "not configured" (bucket-config-reads.ts). Its message names the operation the
 * request asks for (`GetBucketAcl is not implemented`, unsupported-subresources.ts).
 * PostObject (a browser form upload, authenticated by a policy in the form, not by the request)
 * is recognised before the gate and handled by post-object.ts (NotImplemented where the app has
 * no form gate, after that app's gate).
 * Spec: S3 API reference, "Actions" (request syntax of each operation).
 */
import { S3Error } from '../model/errors.ts';
import type { S3Address } from './request.ts';
import { isNamedS3Parameter, unsupportedOperation } from './unsupported-subresources.ts';
import { UNCONFIGURED_READS, type UnconfiguredRead } from './bucket-config-reads.ts';

export type S3Operation =
  | 'ListBuckets'
  | 'CreateBucket'
  | 'HeadBucket'
  | 'DeleteBucket'
  | 'GetBucketLocation'
  | 'GetBucketVersioning'
  | 'PutBucketVersioning'
  | 'ListObjectVersions'
  | 'GetBucketCors'
  | 'PutBucketCors'
  | 'DeleteBucketCors'
  | 'GetBucketEncryption'
  | 'PutBucketEncryption'
  | 'DeleteBucketEncryption'
  | 'PutObject'
  | 'GetObject'
  | 'HeadObject'
  | 'DeleteObject'
  | 'DeleteObjects'
  | 'CopyObject'
  | 'ListObjectsV2'
  | 'ListObjects'
  | 'CreateMultipartUpload'
  | 'UploadPart'
  | 'UploadPartCopy'
  | 'CompleteMultipartUpload'
  | 'AbortMultipartUpload'
  | 'ListParts'
  | 'ListMultipartUploads'
  | 'GetBucketAcl'
  | 'PutBucketAcl'
  | 'GetObjectAcl'
  | 'PutObjectAcl'
  | 'GetBucketTagging'
  | 'PutBucketTagging'
  | 'DeleteBucketTagging'
  | 'GetBucketLifecycleConfiguration'
  | 'PutBucketLifecycleConfiguration'
  | 'DeleteBucketLifecycle'
  | 'GetObjectTagging'
  | 'PutObjectTagging'
  | 'DeleteObjectTagging'
  | 'GetObjectAttributes'
  | 'PutBucketOwnershipControls'
  | 'GetBucketOwnershipControls'
  | 'DeleteBucketOwnershipControls'
  | 'GetBucketPolicy'
  | 'PutBucketPolicy'
  | 'DeleteBucketPolicy'
  | 'GetBucketPolicyStatus'
  | 'GetBucketLogging'
  | 'PutBucketLogging'
  | 'GetBucketNotificationConfiguration'
  | 'PutBucketNotificationConfiguration'
  | 'GetPublicAccessBlock'
  | 'PutPublicAccessBlock'
  | 'DeletePublicAccessBlock'
  | 'GetObjectLockConfiguration'
  | 'PutObjectLockConfiguration'
  | 'GetObjectRetention'
  | 'PutObjectRetention'
  | 'GetObjectLegalHold'
  | 'PutObjectLegalHold'
  | 'RestoreObject'
  | UnconfiguredRead;

const RESPONSE_OVERRIDES = [
  'response-content-type',
  'response-content-language',
  'response-expires',
  'response-cache-control',
  'response-content-disposition',
  'response-content-encoding',
];

/** Query parameters each operation understands (besides x-id and presigned-URL parameters). */
const PARAMS: Record<S3Operation, readonly string[]> = {
  ...(Object.fromEntries(Object.entries(UNCONFIGURED_READS).map(([op, [param]]) => [op, [param]])) as Record<UnconfiguredRead, string[]>),
  GetBucketAcl: ['acl'],
  PutBucketAcl: ['acl'],
  GetObjectAcl: ['acl', 'versionId'],
  PutObjectAcl: ['acl', 'versionId'],
  GetBucketTagging: ['tagging'],
  PutBucketTagging: ['tagging'],
  DeleteBucketTagging: ['tagging'],
  GetBucketLifecycleConfiguration: ['lifecycle'],
  PutBucketLifecycleConfiguration: ['lifecycle'],
  DeleteBucketLifecycle: ['lifecycle'],
  GetObjectTagging: ['tagging', 'versionId'],
  PutObjectTagging: ['tagging', 'versionId'],
  DeleteObjectTagging: ['tagging', 'versionId'],
  GetObjectAttributes: ['attributes', 'versionId'],
  PutBucketOwnershipControls: ['ownershipControls'],
  GetBucketOwnershipControls: ['ownershipControls'],
  DeleteBucketOwnershipControls: ['ownershipControls'],
  GetBucketPolicy: ['policy'],
  PutBucketPolicy: ['policy'],
  DeleteBucketPolicy: ['policy'],
  GetBucketPolicyStatus: ['policyStatus'],
  GetPublicAccessBlock: ['publicAccessBlock'],
  PutPublicAccessBlock: ['publicAccessBlock'],
  DeletePublicAccessBlock: ['publicAccessBlock'],
  GetBucketLogging: ['logging'],
  PutBucketLogging: ['logging'],
  GetBucketNotificationConfiguration: ['notification'],
  PutBucketNotificationConfiguration: ['notification'],
  GetObjectLockConfiguration: ['object-lock'],
  PutObjectLockConfiguration: ['object-lock'],
  GetObjectRetention: ['retention', 'versionId'],
  PutObjectRetention: ['retention', 'versionId'],
  GetObjectLegalHold: ['legal-hold', 'versionId'],
  PutObjectLegalHold: ['legal-hold', 'versionId'],
  RestoreObject: ['restore', 'versionId'],
  ListBuckets: ['prefix', 'max-buckets', 'continuation-token', 'bucket-region'],
  CreateBucket: [],
  HeadBucket: ['read-stats'], // Ceph RGW's usage extension (rgw-read-stats.ts)
  DeleteBucket: [],
  GetBucketLocation: ['location'],
  GetBucketVersioning: ['versioning'],
  PutBucketVersioning: ['versioning'],
  ListObjectVersions: ['versions', 'prefix', 'delimiter', 'max-keys', 'key-marker', 'version-id-marker', 'encoding-type'],
  GetBucketCors: ['cors'],
  PutBucketCors: ['cors'],
  DeleteBucketCors: ['cors'],
  GetBucketEncryption: ['encryption'],
  PutBucketEncryption: ['encryption'],
  DeleteBucketEncryption: ['encryption'],
  PutObject: [],
  GetObject: [...RESPONSE_OVERRIDES, 'partNumber', 'versionId'],
  HeadObject: [...RESPONSE_OVERRIDES, 'partNumber', 'versionId'],
  DeleteObject: ['versionId'],
  DeleteObjects: ['delete'],
  CopyObject: [],
  ListObjectsV2: ['list-type', 'prefix', 'delimiter', 'max-keys', 'continuation-token', 'start-after', 'encoding-type', 'fetch-owner', 'allow-unordered'],
  ListObjects: ['prefix', 'delimiter', 'marker', 'max-keys', 'encoding-type', 'allow-unordered'],
  CreateMultipartUpload: ['uploads'],
  UploadPart: ['partNumber', 'uploadId'],
  UploadPartCopy: ['partNumber', 'uploadId'],
  CompleteMultipartUpload: ['uploadId'],
  AbortMultipartUpload: ['uploadId'],
  ListParts: ['uploadId', 'max-parts', 'part-number-marker'],
  ListMultipartUploads: ['uploads', 'prefix', 'delimiter', 'key-marker', 'upload-id-marker', 'max-uploads', 'encoding-type'],
};

/** Presigned-URL parameters (SigV4 X-Amz-*, hoisted x-amz-* headers, SigV2) and the SDK's x-id. */
const isAuthOrHint = (name: string) => /^x-amz-/i.test(name) || name === 'x-id' || ['AWSAccessKeyId', 'Signature', 'Expires'].includes(name);

/** PostObject: a multipart/form-data POST to a bucket (a browser form upload, post-object.ts). */
export function isPostObject(method: string, addr: S3Address, headers: Headers): boolean {
  return method === 'POST' && addr.bucket !== null && addr.key === null && /^multipart\/form-data\b/i.test(headers.get('content-type') ?? '');
}

/** PostObject on an app without a form gate: NotImplemented (after the gate: a refused gateway's refusal comes first). */
export function refusePostObject(method: string, addr: S3Address, headers: Headers): void {
  if (isPostObject(method, addr, headers)) throw new S3Error('NotImplemented', 'PostObject (browser form upload) is not implemented.');
}

/** Every query parameter of S3's API this gateway knows by name: those operations.ts understands and those it refuses. */
const S3_PARAMETERS = new Set(Object.values(PARAMS).flat());
const isS3Parameter = (name: string) => S3_PARAMETERS.has(name) || isNamedS3Parameter(name);

export function detectOperation(method: string, addr: S3Address, headers: Headers): S3Operation {
  const op = route(method, addr, headers);
  for (const name of addr.query.keys()) {
    if (!PARAMS[op].includes(name) && !isAuthOrHint(name) && isS3Parameter(name)) {
      const asked = unsupportedOperation(method, addr.key !== null, name);
      throw new S3Error('NotImplemented', asked ? `${asked} is not implemented.` : `${op} with the '${name}' query parameter is not implemented.`);
    }
  }
  // ACL headers: after the gate (acl-headers.ts assertAclHeaders), which may refuse a public one and knows the bucket's owner and ownership.
  assertSupportedHeaders(headers);
  return op;
}

function route(method: string, { bucket, key, query }: S3Address, headers: Headers): S3Operation {
  const has = (name: string) => query.has(name);
  const copy = headers.has('x-amz-copy-source');
  if (bucket === null) {
    if (method === 'GET') return 'ListBuckets';
  } else if (key === null) {
    switch (method) {
      case 'GET':
        for (const [op, [param]] of Object.entries(UNCONFIGURED_READS)) if (has(param)) return op as UnconfiguredRead;
        if (has('policy')) return 'GetBucketPolicy';
        if (has('policyStatus')) return 'GetBucketPolicyStatus';
        if (has('ownershipControls')) return 'GetBucketOwnershipControls';
        if (has('publicAccessBlock')) return 'GetPublicAccessBlock';
        if (has('logging')) return 'GetBucketLogging';
        if (has('notification')) return 'GetBucketNotificationConfiguration';
        if (has('acl')) return 'GetBucketAcl';
        if (has('object-lock')) return 'GetObjectLockConfiguration';
        if (has('tagging')) return 'GetBucketTagging';
        if (has('lifecycle')) return 'GetBucketLifecycleConfiguration';
        if (has('location')) return 'GetBucketLocation';
        if (has('versioning')) return 'GetBucketVersioning';
        if (has('versions')) return 'ListObjectVersions';
        if (has('cors')) return 'GetBucketCors';
        if (has('encryption')) return 'GetBucketEncryption';
        if (has('uploads')) return 'ListMultipartUploads';
        if (!has('list-type')) return 'ListObjects';
        if (query.get('list-type') === '2') return 'ListObjectsV2';
        throw new S3Error('InvalidArgument', 'Invalid list-type', { ArgumentName: 'list-type', ArgumentValue: query.get('list-type')! });
      case 'HEAD':
        return 'HeadBucket';
      case 'PUT':
        if (has('policy')) return 'PutBucketPolicy';
        if (has('publicAccessBlock')) return 'PutPublicAccessBlock';
        if (has('logging')) return 'PutBucketLogging';
        if (has('notification')) return 'PutBucketNotificationConfiguration';
        if (has('acl')) return 'PutBucketAcl';
        if (has('tagging')) return 'PutBucketTagging';
        if (has('lifecycle')) return 'PutBucketLifecycleConfiguration';
        if (has('cors')) return 'PutBucketCors';
        if (has('encryption')) return 'PutBucketEncryption';
        if (has('ownershipControls')) return 'PutBucketOwnershipControls';
        if (has('object-lock')) return 'PutObjectLockConfiguration';
        if (has('versioning')) return 'PutBucketVersioning';
        if (subresourceOf(method, false, query)) break;
        return 'CreateBucket';
      case 'DELETE':
        if (has('policy')) return 'DeleteBucketPolicy';
        if (has('publicAccessBlock')) return 'DeletePublicAccessBlock';
        if (has('tagging')) return 'DeleteBucketTagging';
        if (has('lifecycle')) return 'DeleteBucketLifecycle';
        if (has('cors')) return 'DeleteBucketCors';
        if (has('encryption')) return 'DeleteBucketEncryption';
        if (has('ownershipControls')) return 'DeleteBucketOwnershipControls';
        if (subresourceOf(method, false, query)) break;
        return 'DeleteBucket';
      case 'POST':
        if (has('delete')) return 'DeleteObjects';
    }
  } else {
    switch (method) {
      case 'HEAD':
        return 'HeadObject';
      case 'GET':
        if (has('acl')) return 'GetObjectAcl';
        if (has('tagging')) return 'GetObjectTagging';
        if (has('attributes')) return 'GetObjectAttributes';
        if (has('retention')) return 'GetObjectRetention';
        if (has('legal-hold')) return 'GetObjectLegalHold';
        return has('uploadId') ? 'ListParts' : 'GetObject';
      case 'PUT':
        if (has('acl')) return 'PutObjectAcl';
        if (has('tagging')) return 'PutObjectTagging';
        if (has('retention')) return 'PutObjectRetention';
        if (has('legal-hold')) return 'PutObjectLegalHold';
        if (has('partNumber') || has('uploadId')) return copy ? 'UploadPartCopy' : 'UploadPart';
        return copy ? 'CopyObject' : 'PutObject';
      case 'POST':
        if (has('uploads')) return 'CreateMultipartUpload';
        if (has('uploadId')) return 'CompleteMultipartUpload';
        if (has('restore')) return 'RestoreObject';
        break;
      case 'DELETE':
        if (has('tagging')) return 'DeleteObjectTagging';
        return has('uploadId') ? 'AbortMultipartUpload' : 'DeleteObject';
    }
  }
  const asked = subresourceOf(method, key !== null, query);
  if (asked) throw new S3Error('NotImplemented', `${asked} is not implemented.`);
  throw new S3Error(
    'NotImplemented',
    `${method} ${bucket === null ? 'on the service' : key === null ? 'on a bucket' : 'on an object'} with these parameters is not implemented.`,
  );
}

/** The unimplemented operation a subresource parameter of the query asks for, if any. */
function subresourceOf(method: string, onObject: boolean, query: URLSearchParams): string | undefined {
  for (const name of query.keys()) {
    const asked = unsupportedOperation(method, onObject, name);
    if (asked) return asked;
  }
  return undefined;
}

/** Headers that ask for features this gateway does not have (ACL headers are acl-headers.ts's). */
export function assertSupportedHeaders(headers: Headers): void {
  const refuse = (name: string) => {
    throw new S3Error('NotImplemented', `The '${name}' header is not implemented.`);
  };
  for (const [name] of headers) {
    // Object Lock headers are read by the operations that take them (object-lock.ts).
    if (/^x-amz-(website-redirect-location|write-offset-bytes)$/.test(name)) refuse(name);
  }
}
