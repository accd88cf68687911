/**
 * SigV2 presigned URL verification (`?AWSAccessKeyId=...&Signature=...&Expires=<epoch s>`),
 * what boto3's generate_presigned_url makes for us-east-1 by default. Steps are in sigv2.ts.
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
  'prefix', 'delimiter', 'marker', 'max-keys', 'encoding-type', 'list-type', 'continuation-token', 'start-after',
  'fetch-owner', 'max-buckets', 'bucket-region', 'key-marker', 'upload-id-marker', 'max-uploads', 'max-parts',
  'part-number-marker',
]);

const isUnsignedButInert = (name: string) =>
  LISTING_OPTIONS.has(name) || name === 'x-id' || /^(x-amz-|content-type$|content-md5$)/i.test(name);

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
  for (const [name] of view.params) {
    if (!SUBRESOURCES.has(name) && !OWN_PARAMS.has(name) && !isUnsignedButInert(name)) {
      throw new S3Error('AccessDenied', `The query parameter '${name}' is not covered by a SigV2 signature.`);
    }
  }
  // base64 has no spaces: a '+' that arrived unencoded (and so decoded as a space) is a plus.
  const provided = signatureText.replace(/ /g, '+');
  const toSignOver = (rawPath: string) =>
    stringToSignV2(
      view.method,
      view.headers.get('content-md5') ?? '',
      view.headers.get('content-type') ?? '',
      expires,
      canonicalizedAmzHeaders(view.headers),
      canonicalizedResource(rawPath, view.params, view.hostBucket),
    );
  const matches = async (toSign: string) => timingSafeEqual(await signatureV2(secret, toSign), provided);
  const toSign = toSignOver(view.target.rawPath);
  if (await matches(toSign)) return accessKeyId;
  for (const form of dotSegmentForms(view.target.rawPath)) {
    if (await matches(toSignOver(form))) throw dotSegmentError(form);
  }
  throw signatureMismatch({
    AWSAccessKeyId: accessKeyId,
    StringToSign: toSign,
    SignatureProvided: provided,
  });
}
