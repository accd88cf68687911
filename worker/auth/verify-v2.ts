/**
 * SigV2 presigned URL verification (`?AWSAccessKeyId=...&Signature=...&Expires=<epoch s>`),
 * what boto3's generate_presigned_url makes for us-east-1 by default. Steps are in sigv2.ts.
 * Expiry is the absolute `Expires` time; SigV2 has no upper bound on it (AWS sets none either).
 * The payload is unsigned in SigV2: the caller verifies only what headers declare.
 */

import { S3Error } from '../model/errors.ts';
import { timingSafeEqual } from '../model/bytes.ts';
import { secretFor } from './credential.ts';
import type { RawTarget } from '../model/raw-url.ts';
import { canonicalizedAmzHeaders, canonicalizedResource, signatureV2, stringToSignV2 } from './sigv2.ts';
import { percentDecode } from './sigv4.ts';
import type { VerifyOptions } from './types.ts';

/** Raw (undecoded) value of a query parameter, by exact name. */
function rawParam(rawQuery: string, name: string): string | undefined {
  for (const piece of rawQuery.split('&')) {
    const eq = piece.indexOf('=');
    if ((eq < 0 ? piece : piece.slice(0, eq)) === name) return eq < 0 ? '' : piece.slice(eq + 1);
  }
  return undefined;
}

/** Verifies a SigV2 presigned request; returns the access key id. */
export async function verifyPresignedV2(request: Request, target: RawTarget, opts: VerifyOptions): Promise<string> {
  const accessKeyId = rawParam(target.rawQuery, 'AWSAccessKeyId');
  const signatureRaw = rawParam(target.rawQuery, 'Signature');
  const expires = rawParam(target.rawQuery, 'Expires');
  if (accessKeyId === undefined || signatureRaw === undefined || expires === undefined) {
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
  const keyId = percentDecode(accessKeyId);
  const secret = secretFor(opts.credentials, keyId);
  // A '+' of the base64 signature may arrive unencoded: it is a plus here, never a space.
  const provided = percentDecode(signatureRaw);
  const toSign = stringToSignV2(
    request.method,
    request.headers.get('content-md5') ?? '',
    request.headers.get('content-type') ?? '',
    expires,
    canonicalizedAmzHeaders(request.headers),
    canonicalizedResource(target.rawPath, target.rawQuery, opts.virtualHostedBucket),
  );
  if (!timingSafeEqual(await signatureV2(secret, toSign), provided)) {
    throw new S3Error('SignatureDoesNotMatch', undefined, { AWSAccessKeyId: keyId, StringToSign: toSign, SignatureProvided: provided });
  }
  return keyId;
}
