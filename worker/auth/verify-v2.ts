/**
 * SigV2 verification: presigned URLs (`?AWSAccessKeyId=...&Signature=...&Expires=<epoch s>`),
 * what boto3's generate_presigned_url makes for us-east-1 by default, and the header form
 * (`Authorization: AWS <key>:<signature>`, verifyHeaderV2). Steps are in sigv2.ts.
 * Expiry is the absolute `Expires` time; SigV2 has no upper bound on it (AWS sets none either).
 * The payload is unsigned in SigV2: the caller verifies only what headers declare.
 *
 * What SigV2 signs is narrow: method, Content-MD5, Content-Type, Expires, the x-amz-* headers and
 * the resource (bucket, raw path, sub-resources). The host is not signed, so a virtual-hosted
 * request is verified over `/<bucket named by the host>/<path>` (botocore signs that form too):
 * one signature is good for one bucket. The other query parameters are not signed, so they are
 * refused unless they cannot change what the URL grants: listing options (which page or filter of
 * a listing the URL already allows), the SDK's `x-id`, and the header copies botocore adds to the
 * query (the router never applies those for SigV2).
 * Known gap: a SigV2 URL cannot call the admin API (it does not sign `bucket=`): admin.ts refuses it.
 */

import { S3Error } from '../model/errors.ts';
import { timingSafeEqual } from '../model/bytes.ts';
import type { RequestView } from '../model/request.ts';
import { secretFor } from './credential.ts';
import { dotSegmentError, dotSegmentForms, signatureMismatch } from './dot-segments.ts';
import { canonicalizedAmzHeaders, canonicalizedResource, signatureV2, stringToSignV2, SUBRESOURCES } from './sigv2.ts';
import type { VerifyOptions } from './types.ts';

const OWN_PARAMS = new Set(['AWSAccessKeyId', 'Signature', 'Expires']);

/** Unsigned query parameters that select within what a listing URL grants anyway. */
const LISTING_OPTIONS = new Set([
  'prefix',
  'delimiter',
  'marker',
  'max-keys',
  'encoding-type',
  'list-type',
  'continuation-token',
  'start-after',
  'fetch-owner',
  'max-buckets',
  'bucket-region',
  'key-marker',
  'upload-id-marker',
  'max-uploads',
  'max-parts',
  'part-number-marker',
]);

const isUnsignedButInert = (name: string) => LISTING_OPTIONS.has(name) || name === 'x-id' || /^(x-amz-|content-type$|content-md5$)/i.test(name);

/** Refuses query parameters a SigV2 signature does not cover, unless they are inert. */
function assertCoveredParams(view: RequestView): void {
  for (const [name] of view.params) {
    if (!SUBRESOURCES.has(name) && !OWN_PARAMS.has(name) && !isUnsignedButInert(name)) {
      throw new S3Error('AccessDenied', `The query parameter '${name}' is not covered by a SigV2 signature.`);
    }
  }
}

/**
 * The path forms one request may be signed over: a request addressing a bucket alone is signed
 * as `/bucket/` by botocore's HmacV1Auth (AWS's CanonicalizedResource rule) and as `/bucket` by
 * others; both name the bucket, never a key.
 */
function bucketPathForms(rawPath: string, hostBucket: string | null): string[] {
  if (hostBucket !== null || !/^\/[^/]+\/?$/.test(rawPath)) return [rawPath];
  return rawPath.endsWith('/') ? [rawPath, rawPath.slice(0, -1)] : [rawPath, rawPath + '/'];
}

/**
 * Checks `provided` against the signature of the request with `dateLines` in the Date slot (the
 * Expires time of a URL; the Date header, or the empty line, of header auth); the first that
 * matches wins. Unlike SigV4, the payload is not signed.
 */
async function verifySignatureV2(view: RequestView, accessKeyId: string, secret: string, provided: string, dateLines: string[]): Promise<void> {
  const toSignOver = (rawPath: string, date: string) =>
    stringToSignV2(
      view.method,
      view.headers.get('content-md5') ?? '',
      view.headers.get('content-type') ?? '',
      date,
      canonicalizedAmzHeaders(view.headers),
      canonicalizedResource(rawPath, view.params, view.hostBucket),
    );
  const matches = async (toSign: string) => timingSafeEqual(await signatureV2(secret, toSign), provided);
  for (const path of bucketPathForms(view.target.rawPath, view.hostBucket)) {
    for (const date of dateLines) if (await matches(toSignOver(path, date))) return;
  }
  for (const form of dotSegmentForms(view.target.rawPath)) {
    for (const date of dateLines) if (await matches(toSignOver(form, date))) throw dotSegmentError(form);
  }
  throw signatureMismatch({ AWSAccessKeyId: accessKeyId, StringToSign: toSignOver(view.target.rawPath, dateLines[0]!), SignatureProvided: provided });
}

/** Verifies a SigV2 presigned request; returns the access key id. */
export async function verifyPresignedV2(view: RequestView, opts: VerifyOptions): Promise<string> {
  const param = (name: string) => view.params.find(([n]) => n === name)?.[1];
  const accessKeyId = param('AWSAccessKeyId');
  const signatureText = param('Signature');
  const expires = param('Expires');
  if (accessKeyId === undefined || signatureText === undefined || expires === undefined) {
    throw new S3Error('AccessDenied', 'Query-string authentication requires the Signature, Expires and AWSAccessKeyId parameters');
  }
  if (!/^\d{1,12}$/.test(expires)) throw new S3Error('AccessDenied', 'Invalid date (should be seconds since epoch): ' + expires);
  const now = opts.now ?? new Date();
  if (now.getTime() > Number(expires) * 1000) {
    throw new S3Error('AccessDenied', 'Request has expired', {
      Expires: new Date(Number(expires) * 1000).toISOString(),
      ServerTime: now.toISOString(),
    });
  }
  const secret = secretFor(opts.credentials, accessKeyId);
  assertCoveredParams(view);
  // base64 has no spaces: a '+' that arrived unencoded (and so decoded as a space) is a plus.
  await verifySignatureV2(view, accessKeyId, secret, signatureText.replace(/ /g, '+'), [expires]);
  return accessKeyId;
}

/** How far a SigV2 header request's Date (or x-amz-date) may be from the server's clock. */
const MAX_SKEW_MS = 15 * 60 * 1000;

/**
 * Verifies `Authorization: AWS <AccessKeyId>:<Signature>` (boto2, old s3cmd configurations,
 * appliances). The Date slot of the string to sign is the Date header; with x-amz-date (signed
 * among the x-amz-* headers) clients leave it empty or repeat it, and both are accepted. The
 * request time (x-amz-date, else Date) must be within 15 minutes of the server's clock
 * (RequestTimeTooSkewed), as for SigV4; one without either, unparseable or before 1970 is
 * AccessDenied.
 */
export async function verifyHeaderV2(view: RequestView, opts: VerifyOptions): Promise<string> {
  const authorization = view.headers.get('authorization')!.trim();
  const m = /^AWS\s+([^:\s]+):(\S+)$/.exec(authorization);
  if (!m)
    throw new S3Error('InvalidArgument', 'AWS authorization header is invalid.  Expected AwsAccessKeyId:signature', {
      ArgumentName: 'Authorization',
      ArgumentValue: authorization,
    });
  const [, accessKeyId, provided] = m as unknown as [string, string, string];
  const amzDate = view.headers.get('x-amz-date');
  const date = view.headers.get('date');
  const sent = amzDate ?? date;
  const time = sent === null ? NaN : Date.parse(sent);
  // A time before the epoch is as invalid as an unparseable one (AWS; ceph/s3-tests).
  if (Number.isNaN(time) || time < 0) throw new S3Error('AccessDenied', 'AWS authentication requires a valid Date or x-amz-date header');
  const now = opts.now ?? new Date();
  if (Math.abs(now.getTime() - time) > MAX_SKEW_MS) {
    throw new S3Error('RequestTimeTooSkewed', undefined, {
      RequestTime: sent!,
      ServerTime: now.toISOString(),
      MaxAllowedSkewMilliseconds: String(MAX_SKEW_MS),
    });
  }
  const secret = secretFor(opts.credentials, accessKeyId);
  assertCoveredParams(view);
  await verifySignatureV2(view, accessKeyId, secret, provided, amzDate !== null ? ['', date ?? ''] : [date ?? '']);
  return accessKeyId;
}
