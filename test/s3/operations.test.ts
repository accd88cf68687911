/** Operation detection (method + path + query -> AWS operation name) and raw-URL addressing. */
import { describe, expect, it } from 'vitest';
import type { S3Error } from '../../worker/model/errors.ts';
import { detectOperation } from '../../worker/s3/operations.ts';
import { assertAclHeaders, knownAccounts } from '../../worker/s3/acl-headers.ts';
import { STRANGER } from '../../worker/model/account.ts';
import { NO_SETTINGS } from '../../worker/model/bucket-settings.ts';
import { requestView } from '../../worker/model/request.ts';
import { effectiveHeaders, parseS3Address } from '../../worker/s3/request.ts';

/** The request view of `url` sent with these headers (the Host header names the host). */
const view = (url: string, headers: Record<string, string> = {}, baseDomains: string[] = []) => requestView(new Request(url, { headers }), baseDomains);
const address = (url: string, host: string, baseDomains: string[] = []) => parseS3Address(view(url, { host }, baseDomains));

const detect = (method: string, target: string, headers: Record<string, string> = {}) =>
  detectOperation(method, address(`http://gw.test${target}`, 'gw.test'), new Headers(headers));

describe('detectOperation', () => {
  it.each([
    ['GET', '/', {}, 'ListBuckets'],
    ['PUT', '/b', {}, 'CreateBucket'],
    ['HEAD', '/b', {}, 'HeadBucket'],
    ['DELETE', '/b/', {}, 'DeleteBucket'],
    ['GET', '/b?location', {}, 'GetBucketLocation'],
    ['GET', '/b?versioning', {}, 'GetBucketVersioning'],
    ['PUT', '/b?versioning', {}, 'PutBucketVersioning'],
    ['GET', '/b?versions&key-marker=a&version-id-marker=null', {}, 'ListObjectVersions'],
    ['GET', '/b/k?versionId=null', {}, 'GetObject'],
    ['HEAD', '/b/k?versionId=null', {}, 'HeadObject'],
    ['DELETE', '/b/k?versionId=null', {}, 'DeleteObject'],
    ['PUT', '/b/k?tagging&versionId=null', {}, 'PutObjectTagging'],
    ['GET', '/b?cors', {}, 'GetBucketCors'],
    ['PUT', '/b?cors', {}, 'PutBucketCors'],
    ['DELETE', '/b?cors', {}, 'DeleteBucketCors'],
    ['GET', '/b/k?partNumber=2', {}, 'GetObject'],
    ['HEAD', '/b/k?partNumber=1', {}, 'HeadObject'],
    ['GET', '/b?list-type=2&prefix=a&x-id=ListObjectsV2', {}, 'ListObjectsV2'],
    ['GET', '/b?prefix=a&marker=b', {}, 'ListObjects'],
    ['GET', '/b?uploads=', {}, 'ListMultipartUploads'],
    ['POST', '/b/?delete=', {}, 'DeleteObjects'],
    ['PUT', '/b/k?x-id=PutObject', {}, 'PutObject'],
    ['PUT', '/b/k', { 'x-amz-copy-source': 'b/j' }, 'CopyObject'],
    ['GET', '/b/k?response-content-type=x', {}, 'GetObject'],
    ['HEAD', '/b/k', {}, 'HeadObject'],
    ['DELETE', '/b/k', {}, 'DeleteObject'],
    ['POST', '/b/k?uploads=', {}, 'CreateMultipartUpload'],
    ['PUT', '/b/k?partNumber=1&uploadId=u', {}, 'UploadPart'],
    ['PUT', '/b/k?partNumber=1&uploadId=u', { 'x-amz-copy-source': 'b/j' }, 'UploadPartCopy'],
    ['POST', '/b/k?uploadId=u', {}, 'CompleteMultipartUpload'],
    ['DELETE', '/b/k?uploadId=u', {}, 'AbortMultipartUpload'],
    ['GET', '/b/k?uploadId=u&max-parts=2', {}, 'ListParts'],
    ['GET', '/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=ab&x-amz-checksum-mode=ENABLED', {}, 'GetObject'],
    ['GET', '/b/k?AWSAccessKeyId=a&Signature=s&Expires=1', {}, 'GetObject'],
    ['GET', '/b?acl', {}, 'GetBucketAcl'],
    ['PUT', '/b?acl', { 'x-amz-acl': 'private' }, 'PutBucketAcl'],
    ['GET', '/b/k?acl', {}, 'GetObjectAcl'],
    ['PUT', '/b/k?acl', {}, 'PutObjectAcl'],
    ['GET', '/b?tagging', {}, 'GetBucketTagging'],
    ['PUT', '/b?tagging', {}, 'PutBucketTagging'],
    ['DELETE', '/b?tagging', {}, 'DeleteBucketTagging'],
    ['GET', '/b/k?tagging', {}, 'GetObjectTagging'],
    ['PUT', '/b/k?tagging', {}, 'PutObjectTagging'],
    ['DELETE', '/b/k?tagging', {}, 'DeleteObjectTagging'],
    ['GET', '/b/k?attributes', {}, 'GetObjectAttributes'],
    ['PUT', '/b/k', { 'x-amz-tagging': 'a=b', 'x-amz-acl': 'bucket-owner-full-control' }, 'PutObject'],
    ['GET', '/b?policy', {}, 'GetBucketPolicy'],
    ['GET', '/b?policyStatus', {}, 'GetBucketPolicyStatus'],
    ['PUT', '/b?policy', {}, 'PutBucketPolicy'],
    ['DELETE', '/b?policy', {}, 'DeleteBucketPolicy'],
    ['GET', '/b?encryption', {}, 'GetBucketEncryption'],
    ['GET', '/b?object-lock', {}, 'GetObjectLockConfiguration'],
    ['PUT', '/b?object-lock', {}, 'PutObjectLockConfiguration'],
    ['GET', '/b/k?retention', {}, 'GetObjectRetention'],
    ['PUT', '/b/k?retention&versionId=null', {}, 'PutObjectRetention'],
    ['GET', '/b/k?legal-hold', {}, 'GetObjectLegalHold'],
    ['POST', '/b/k?restore', {}, 'RestoreObject'],
    ['PUT', '/b/k?legal-hold', {}, 'PutObjectLegalHold'],
    ['GET', '/b?website', {}, 'GetBucketWebsite'],
    ['GET', '/b?replication', {}, 'GetBucketReplication'],
    ['GET', '/b?logging', {}, 'GetBucketLogging'],
    ['GET', '/b?notification', {}, 'GetBucketNotificationConfiguration'],
    ['GET', '/b?accelerate', {}, 'GetBucketAccelerateConfiguration'],
    ['GET', '/b?requestPayment', {}, 'GetBucketRequestPayment'],
    ['GET', '/b?publicAccessBlock', {}, 'GetPublicAccessBlock'],
    ['GET', '/b?ownershipControls', {}, 'GetBucketOwnershipControls'],
    ['PUT', '/b?ownershipControls', {}, 'PutBucketOwnershipControls'],
    ['DELETE', '/b?ownershipControls', {}, 'DeleteBucketOwnershipControls'],
    ['GET', '/b?lifecycle', {}, 'GetBucketLifecycleConfiguration'],
    ['PUT', '/b?lifecycle', {}, 'PutBucketLifecycleConfiguration'],
    ['DELETE', '/b?lifecycle', {}, 'DeleteBucketLifecycle'],
  ] as [string, string, Record<string, string>, string][])('%s %s -> %s', (method, target, headers, op) => {
    expect(detect(method, target, headers)).toBe(op);
  });

  it.each([
    ['PUT', '/b?website'],
    ['DELETE', '/b?replication'],
    ['PUT', '/b/k?versionId=null'],
    ['POST', '/b/k'],
    ['POST', '/b'],
    ['PUT', '/'],
    ['PATCH', '/b/k'],
  ])('%s %s -> NotImplemented', (method, target) => {
    expect(() => detect(method, target)).toThrow(expect.objectContaining({ code: 'NotImplemented', status: 501 }));
  });

  it.each([
    ['PUT', '/b?replication', 'PutBucketReplication is not implemented.'],
    ['DELETE', '/b?website', 'DeleteBucketWebsite is not implemented.'],
    ['PUT', '/b?replication', 'PutBucketReplication is not implemented.'],
    ['POST', '/b/k?select&select-type=2', 'SelectObjectContent is not implemented.'],
    ['PUT', '/b/k?versionId=3', 'PutObject of a version (versionId) is not implemented.'],
    ['POST', '/b/k?uploads&versionId=3', 'a multipart operation on a version (versionId) is not implemented.'],
    ['PUT', '/b/k?prefix=a', "PutObject with the 'prefix' query parameter is not implemented."],
    ['GET', '/b?metadataTable', "ListObjects with the 'metadataTable' query parameter is not implemented."],
    ['GET', '/?usage', "ListBuckets with the 'usage' query parameter is not implemented."],
  ])('%s %s: the message names the operation asked for', (method, target, message) => {
    expect(() => detect(method, target)).toThrow(expect.objectContaining({ code: 'NotImplemented', message }));
  });
});

describe('query parameters that are not S3 API: ignored, as S3 ignores them', () => {
  it.each([
    ['GET', '/b/k?v=3', 'GetObject'], // a web page's cache buster on a public object
    ['GET', '/b/k?frobnicate=1&versionId=7', 'GetObject'],
    ['GET', '/b?bucket=b&key=k&etag=%22e%22', 'ListObjects'], // a POST form's success_action_redirect to the bucket
    ['PUT', '/b/k?utm_source=x', 'PutObject'],
    ['GET', '/b?list-type=2&v=1', 'ListObjectsV2'],
    ['DELETE', '/b/k?uploadId=u&cb=1', 'AbortMultipartUpload'],
  ])('%s %s -> %s', (method, target, op) => {
    expect(detect(method, target)).toBe(op);
  });
});

/** The gate's check of a write's ACL headers on a BucketOwnerEnforced bucket (no ownership row) of `owner`, signed by `requester`. */
const assertOwnerOnlyAclHeaders = (headers: Headers, owner = 'shardgate', requester: string | null = owner) =>
  assertAclHeaders(headers, owner, requester, NO_SETTINGS.rows, knownAccounts({ accounts: ['shardgate', 'alt'] }));

describe('ACL headers: only the owner FULL_CONTROL (bucket owner enforced)', () => {
  it.each([
    [{ 'x-amz-acl': 'public-read' }],
    [{ 'x-amz-acl': 'authenticated-read' }],
    [{ 'x-amz-acl': 'public-read-write' }],
    [{ 'x-amz-grant-read': 'uri="http://acs.amazonaws.com/groups/global/AllUsers"' }],
  ])('%o (public) passes detection, for the gate, and is AccessControlListNotSupported after it', (headers) => {
    for (const [method, target] of [
      ['PUT', '/b'],
      ['PUT', '/b/k'],
      ['POST', '/b/k?uploads'],
      ['PUT', '/b?acl'],
    ]) {
      expect(() => detect(method!, target!, headers)).not.toThrow();
      expect(() => assertOwnerOnlyAclHeaders(new Headers(headers))).toThrow(expect.objectContaining({ code: 'AccessControlListNotSupported', status: 400 }));
    }
  });

  // Since ACLs (issue 43), no ACL header is judged at detection: the gate knows the bucket's Object Ownership (acl-headers.ts assertAclHeaders).
  it.each([[{ 'x-amz-acl': 'log-delivery-write' }], [{ 'x-amz-grant-read': 'id="alt"' }]])('%o passes detection, for the gate to judge', (headers) => {
    for (const [method, target] of [
      ['PUT', '/b'],
      ['PUT', '/b/k'],
      ['POST', '/b/k?uploads'],
      ['PUT', '/b?acl'],
    ]) {
      expect(() => detect(method!, target!, headers)).not.toThrow();
    }
    expect(() => assertOwnerOnlyAclHeaders(new Headers(headers))).toThrow(expect.objectContaining({ code: 'AccessControlListNotSupported' }));
  });

  // A grant to an id is judged after the gate, which knows the bucket's owner (model/account.ts).
  it.each([[{ 'x-amz-grant-full-control': 'id="someone-else"' }], [{ 'x-amz-grant-full-control': 'id="shardgate", id="someone-else"' }]])(
    '%o passes detection and is AccessControlListNotSupported unless every id is the bucket owner',
    (headers) => {
      expect(() => detect('PUT', '/b/k', headers)).not.toThrow();
      expect(() => assertOwnerOnlyAclHeaders(new Headers(headers))).toThrow(expect.objectContaining({ code: 'AccessControlListNotSupported', status: 400 }));
    },
  );

  it('a grant of FULL_CONTROL to the bucket owner passes for that owner only', () => {
    const headers = new Headers({ 'x-amz-grant-full-control': 'id="alt"' });
    expect(() => assertOwnerOnlyAclHeaders(headers, 'alt')).not.toThrow();
    expect(() => assertOwnerOnlyAclHeaders(headers, 'shardgate')).toThrow(expect.objectContaining({ code: 'AccessControlListNotSupported' }));
  });

  it.each([[{ 'x-amz-acl': 'private' }], [{ 'x-amz-acl': 'bucket-owner-full-control' }], [{ 'x-amz-grant-full-control': 'id="shardgate"' }]])(
    '%o is accepted',
    (headers) => {
      expect(detect('PUT', '/b/k', headers)).toBe('PutObject');
      expect(detect('PUT', '/b', headers)).toBe('CreateBucket');
      expect(() => assertOwnerOnlyAclHeaders(new Headers(headers))).not.toThrow();
    },
  );

  // AWS accepts `private` within the bucket's account, where it names the bucket owner, and refuses
  // it from another account, whose object it would keep from the bucket owner (acl-headers.ts).
  it("private is the bucket owner's own: accepted from its account (and gateway-wide anonymous access), refused from another and a stranger", () => {
    const privateAcl = new Headers({ 'x-amz-acl': 'private' });
    expect(() => assertOwnerOnlyAclHeaders(privateAcl, 'shardgate', 'shardgate')).not.toThrow();
    expect(() => assertOwnerOnlyAclHeaders(privateAcl, 'shardgate', null)).not.toThrow();
    for (const requester of ['alt', STRANGER])
      expect(() => assertOwnerOnlyAclHeaders(privateAcl, 'shardgate', requester)).toThrow(
        expect.objectContaining({ code: 'AccessControlListNotSupported', status: 400 }),
      );
    expect(() => assertOwnerOnlyAclHeaders(new Headers({ 'x-amz-acl': 'bucket-owner-full-control' }), 'shardgate', 'alt')).not.toThrow();
  });
});

describe('parseS3Address', () => {
  it('takes the key from the raw path: spaces, +, %, unicode, //', () => {
    expect(address('http://h/b/a%20b+c%25d/%E2%82%AC//x', 'h')).toMatchObject({ bucket: 'b', key: 'a b+c%d/€//x' });
    expect(address('http://h/b//', 'h')).toMatchObject({ bucket: 'b', key: '/' });
    expect(address('http://h/b/', 'h')).toMatchObject({ bucket: 'b', key: null });
    expect(address('http://h/', 'h')).toMatchObject({ bucket: null, key: null });
    expect(address('http://h/b/k?prefix=a%2Bb+c', 'h').query.get('prefix')).toBe('a+b c');
  });

  it('virtual-hosted style when the host is under a base domain', () => {
    expect(address('http://x/k/y', 'my.bucket.s3.example.com:8443', ['s3.example.com'])).toMatchObject({ bucket: 'my.bucket', key: 'k/y' });
    expect(address('http://x/b/k', 's3.example.com', ['s3.example.com'])).toMatchObject({ bucket: 'b', key: 'k' });
  });

  it('refuses invalid UTF-8, characters XML 1.0 cannot carry and keys over 1024 bytes; TAB, LF, CR, DEL are fine', () => {
    const code = (target: string) => {
      try {
        address(`http://h${target}`, 'h');
        return 'accepted';
      } catch (err) {
        return (err as S3Error).code;
      }
    };
    expect(code('/b/%FF')).toBe('InvalidURI');
    expect(code('/b/%E2%82')).toBe('InvalidURI');
    expect(code('/b/%G0')).toBe('InvalidURI');
    expect(code('/b/a%01b')).toBe('InvalidArgument');
    expect(code('/b/a%00b')).toBe('InvalidArgument');
    expect(code('/b/a%EF%BF%BEb')).toBe('InvalidArgument');
    for (const ok of ['a%09b', 'a%0Ab', 'a%0Db', 'a%7Fb', 'a%C2%85b']) expect(code(`/b/${ok}`), ok).toBe('accepted');
    expect(code(`/b/${'k'.repeat(1024)}`)).toBe('accepted');
    expect(code(`/b/${'k'.repeat(1025)}`)).toBe('KeyTooLongError');
  });
});

describe('effectiveHeaders (presigned URLs)', () => {
  it('merges hoisted x-amz-* query parameters, but not signature parameters or flexible checksums', () => {
    const query =
      'X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=c&X-Amz-Signature=s&X-Amz-Content-Sha256=UNSIGNED-PAYLOAD' +
      '&x-amz-meta-a=1&x-amz-acl=public-read&x-amz-checksum-crc32=AAAAAA%3D%3D&x-amz-sdk-checksum-algorithm=CRC32&x-amz-checksum-mode=ENABLED&x-id=PutObject';
    const merged = effectiveHeaders(view(`http://h/b/k?${query}`, { 'x-amz-meta-a': 'from-header' }));
    expect([...merged].sort()).toEqual([
      ['x-amz-acl', 'public-read'],
      ['x-amz-checksum-mode', 'ENABLED'],
      ['x-amz-meta-a', 'from-header'],
    ]);
    // A public ACL passes detection (the gate may refuse it first: a public access block's
    // BlockPublicAcls, 403); the app refuses it after the gate (acl-headers.ts).
    expect(detectOperation('PUT', address(`http://h/b/k?${query}`, 'h'), merged)).toBe('PutObject');
    expect(() => assertOwnerOnlyAclHeaders(merged)).toThrow(expect.objectContaining({ code: 'AccessControlListNotSupported', status: 400 }));
  });

  it('leaves requests that are not presigned alone', () => {
    const plain = view('http://h/b/k?x-amz-meta-b=2', { a: '1' });
    expect(effectiveHeaders(plain)).toBe(plain.headers);
  });
});
