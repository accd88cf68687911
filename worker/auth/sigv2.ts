/**
 * AWS Signature Version 2 for S3 presigned URLs (`?AWSAccessKeyId=&Signature=&Expires=`), which
 * boto3 still makes by default for us-east-1. One function per step, Web Crypto only.
 *
 * Spec: "Signing and Authenticating REST Requests" (S3 API, legacy), query string request
 * authentication; canonicalisation as botocore's HmacV1QueryAuth does it:
 *   StringToSign = Verb \n Content-MD5 \n Content-Type \n Expires \n
 *                  CanonicalizedAmzHeaders CanonicalizedResource
 *   Signature    = base64(HMAC-SHA1(secret, StringToSign))
 *
 * The sub-resources are the request view's decoded parameters (model/request.ts), as AWS
 * canonicalises them: `%75ploadId` is `uploadId` to the signature exactly as it is to the router.
 * (botocore matches raw names; it never encodes these names, so both agree on what it sends.)
 *
 * The header form (`Authorization: AWS key:sig`, Date in the Date slot) uses the same steps
 * (verify-v2.ts verifyHeaderV2). Known gap: a header sent twice is seen joined by ", " (Fetch
 * Headers).
 */

import { toBase64, utf8 } from '../model/bytes.ts';
import type { QueryParam } from '../model/request.ts';

/** Query parameters that name a sub-resource and so are part of the signed resource (botocore's list). */
export const SUBRESOURCES: ReadonlySet<string> = new Set([
  'accelerate',
  'acl',
  'analytics',
  'cors',
  'defaultObjectAcl',
  'delete',
  'inventory',
  'lifecycle',
  'location',
  'logging',
  'metrics',
  'notification',
  'object-lock',
  'partNumber',
  'policy',
  'replication',
  'requestPayment',
  'restore',
  'select',
  'select-type',
  'storageClass',
  'tagging',
  'torrent',
  'uploadId',
  'uploads',
  'versionId',
  'versioning',
  'versions',
  'website',
  'response-cache-control',
  'response-content-disposition',
  'response-content-encoding',
  'response-content-language',
  'response-content-type',
  'response-expires',
]);

/**
 * CanonicalizedResource: `/bucket` (virtual-hosted style: the bucket the host named) + the raw
 * path as sent + the sub-resources, sorted by name, values decoded, a flag sent without '=' kept
 * without it (`?uploads` and `?uploads=` differ), as botocore builds it from `auth_path`.
 */
export function canonicalizedResource(rawPath: string, params: readonly QueryParam[], hostBucket: string | null = null): string {
  let resource = (hostBucket !== null ? '/' + hostBucket : '') + (rawPath || '/');
  const subresources = params
    .filter(([name]) => SUBRESOURCES.has(name))
    .map(([name, value, bare]) => ({ name, text: bare ? name : `${name}=${value}` }))
    // A stable sort by name only, as botocore sorts.
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  if (subresources.length > 0) resource += '?' + subresources.map((s) => s.text).join('&');
  return resource;
}

/** CanonicalizedAmzHeaders: every x-amz-* header, `name:value\n`, names lower-case and sorted. */
export function canonicalizedAmzHeaders(headers: Headers): string {
  const amz: string[] = [];
  headers.forEach((value, name) => {
    if (name.startsWith('x-amz-')) amz.push(`${name}:${value.trim()}\n`);
  });
  return amz.sort().join('');
}

export function stringToSignV2(method: string, contentMd5: string, contentType: string, expires: string, amzHeaders: string, resource: string): string {
  return `${method}\n${contentMd5}\n${contentType}\n${expires}\n${amzHeaders}${resource}`;
}

/** base64(HMAC-SHA1(secret, stringToSign)). */
export async function signatureV2(secret: string, toSign: string): Promise<string> {
  const key = await crypto.subtle.importKey('raw', utf8.encode(secret), { name: 'HMAC', hash: 'SHA-1' }, false, ['sign']);
  return toBase64(await crypto.subtle.sign('HMAC', key, utf8.encode(toSign)));
}
