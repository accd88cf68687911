/**
 * Operation detection: method + bucket/key presence + query flags -> the S3 operation, named
 * exactly as AWS names it. Each operation lists the query parameters it understands; any other
 * parameter (a subresource such as ?acl, ?tagging, ?policy, or an option such as ?versionId) and
 * any header asking for a feature we lack (SSE, tagging, object lock, non-STANDARD storage
 * class, ...) is NotImplemented, never a wrong success. Its message names the operation the
 * request asks for (`GetBucketAcl is not implemented`, unsupported-subresources.ts).
 * PostObject (a browser form upload, authenticated by a policy in the form, not by the request)
 * is recognised before the gate, so it is answered NotImplemented rather than AccessDenied.
 * Spec: S3 API reference, "Actions" (request syntax of each operation).
 */
import { S3Error } from '../model/errors.ts';
import type { S3Address } from './request.ts';
import { unsupportedOperation } from './unsupported-subresources.ts';

export type S3Operation =
  | 'ListBuckets' | 'CreateBucket' | 'HeadBucket' | 'DeleteBucket' | 'GetBucketLocation'
  | 'GetBucketVersioning' | 'GetBucketCors' | 'PutBucketCors' | 'DeleteBucketCors'
  | 'PutObject' | 'GetObject' | 'HeadObject' | 'DeleteObject' | 'DeleteObjects' | 'CopyObject'
  | 'ListObjectsV2' | 'ListObjects'
  | 'CreateMultipartUpload' | 'UploadPart' | 'UploadPartCopy' | 'CompleteMultipartUpload'
  | 'AbortMultipartUpload' | 'ListParts' | 'ListMultipartUploads';

const RESPONSE_OVERRIDES = ['response-content-type', 'response-content-language', 'response-expires', 'response-cache-control', 'response-content-disposition', 'response-content-encoding'];

/** Query parameters each operation understands (besides x-id and presigned-URL parameters). */
const PARAMS: Record<S3Operation, readonly string[]> = {
  ListBuckets: ['prefix', 'max-buckets', 'continuation-token', 'bucket-region'],
  CreateBucket: [],
  HeadBucket: [],
  DeleteBucket: [],
  GetBucketLocation: ['location'],
  GetBucketVersioning: ['versioning'],
  GetBucketCors: ['cors'],
  PutBucketCors: ['cors'],
  DeleteBucketCors: ['cors'],
  PutObject: [],
  GetObject: [...RESPONSE_OVERRIDES, 'partNumber'],
  HeadObject: [...RESPONSE_OVERRIDES, 'partNumber'],
  DeleteObject: [],
  DeleteObjects: ['delete'],
  CopyObject: [],
  ListObjectsV2: ['list-type', 'prefix', 'delimiter', 'max-keys', 'continuation-token', 'start-after', 'encoding-type', 'fetch-owner'],
  ListObjects: ['prefix', 'delimiter', 'marker', 'max-keys', 'encoding-type'],
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

/** PostObject: a multipart/form-data POST to a bucket. Not implemented; checked before the gate. */
export function refusePostObject(method: string, addr: S3Address, headers: Headers): void {
  const form = /^multipart\/form-data\b/i.test(headers.get('content-type') ?? '');
  if (method === 'POST' && addr.bucket !== null && addr.key === null && form) {
    throw new S3Error('NotImplemented', 'PostObject (browser form upload) is not implemented.');
  }
}

export function detectOperation(method: string, addr: S3Address, headers: Headers): S3Operation {
  const op = route(method, addr, headers);
  for (const name of addr.query.keys()) {
    if (!PARAMS[op].includes(name) && !isAuthOrHint(name)) {
      const asked = unsupportedOperation(method, addr.key !== null, name);
      throw new S3Error('NotImplemented', asked ? `${asked} is not implemented.` : `${op} with the '${name}' query parameter is not implemented.`);
    }
  }
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
        if (has('location')) return 'GetBucketLocation';
        if (has('versioning')) return 'GetBucketVersioning';
        if (has('cors')) return 'GetBucketCors';
        if (has('uploads')) return 'ListMultipartUploads';
        if (!has('list-type')) return 'ListObjects';
        if (query.get('list-type') === '2') return 'ListObjectsV2';
        throw new S3Error('InvalidArgument', 'Invalid list-type', { ArgumentName: 'list-type', ArgumentValue: query.get('list-type')! });
      case 'HEAD': return 'HeadBucket';
      case 'PUT': return has('cors') ? 'PutBucketCors' : 'CreateBucket';
      case 'DELETE': return has('cors') ? 'DeleteBucketCors' : 'DeleteBucket';
      case 'POST': if (has('delete')) return 'DeleteObjects';
    }
  } else {
    switch (method) {
      case 'HEAD': return 'HeadObject';
      case 'GET': return has('uploadId') ? 'ListParts' : 'GetObject';
      case 'PUT':
        if (has('partNumber') || has('uploadId')) return copy ? 'UploadPartCopy' : 'UploadPart';
        return copy ? 'CopyObject' : 'PutObject';
      case 'POST':
        if (has('uploads')) return 'CreateMultipartUpload';
        if (has('uploadId')) return 'CompleteMultipartUpload';
        break;
      case 'DELETE': return has('uploadId') ? 'AbortMultipartUpload' : 'DeleteObject';
    }
  }
  const subresource = [...query.keys()].find((name) => unsupportedOperation(method, key !== null, name));
  const asked = subresource && unsupportedOperation(method, key !== null, subresource);
  if (asked) throw new S3Error('NotImplemented', `${asked} is not implemented.`);
  throw new S3Error('NotImplemented', `${method} ${bucket === null ? 'on the service' : key === null ? 'on a bucket' : 'on an object'} with these parameters is not implemented.`);
}

/** Headers that ask for features this gateway does not have. */
function assertSupportedHeaders(headers: Headers): void {
  const refuse = (name: string) => {
    throw new S3Error('NotImplemented', `The '${name}' header is not implemented.`);
  };
  for (const [name, value] of headers) {
    if (/^x-amz-(server-side-encryption|copy-source-server-side-encryption|object-lock-|grant-|website-redirect-location$|write-offset-bytes$|bucket-object-lock-enabled$)/.test(name)) {
      if (!(name === 'x-amz-bucket-object-lock-enabled' && value.toLowerCase() === 'false')) refuse(name);
    }
    if (name === 'x-amz-tagging' || (name === 'x-amz-tagging-directive' && value !== 'COPY')) refuse(name);
    if (name === 'x-amz-acl' && !['private', 'bucket-owner-full-control'].includes(value)) refuse(`${name}: ${value}`);
    if (name === 'x-amz-storage-class' && value !== 'STANDARD') refuse(`${name}: ${value}`);
  }
}
