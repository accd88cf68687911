/**
 * SigV4 verification of the request itself, in its two forms: the Authorization header and the
 * presigned query (`X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=...&X-Amz-Signature=...`).
 * The payload (x-amz-content-sha256 modes, aws-chunked) is handled by the caller, verify.ts.
 *
 * Spec: "Authenticating Requests: Using the Authorization Header (AWS Signature Version 4)" and
 * "... Using Query Parameters" (S3 API reference). Rules applied:
 *   - header auth: time from x-amz-date (else Date), within `maxSkewMs` of now (AWS: 15 min);
 *   - presigned: X-Amz-Expires in 1..604800 s; not valid before X-Amz-Date (minus the skew) nor
 *     after X-Amz-Date + X-Amz-Expires; the payload is UNSIGNED-PAYLOAD unless the URL says;
 *   - `host` must be signed, and so must every x-amz-* header present except the integrity-only
 *     ones (checksums, content-sha256, trailer...): an unsigned x-amz-copy-source or x-amz-acl
 *     would let the bearer of a presigned PUT do something else than what was signed.
 * The canonical URI is tried as SigV4 encodes it and, if that differs, exactly as sent (for
 * clients that sign their own, unusual, encoding); both name the same key. Everything is read
 * from the request view (model/request.ts): the query parameters signed are the ones the router
 * reads. A signature that matches only a dot-segment form of the path is answered as such
 * (dot-segments.ts). A signed `Expect` that the platform consumed is taken as `100-continue`.
 */

import { S3Error } from '../model/errors.ts';
import { timingSafeEqual } from '../model/bytes.ts';
import { assertNotSkewed, DEFAULT_MAX_SKEW_MS, parseAmzDate, parseHttpDate, toAmzDate } from './amz-date.ts';
import type { ChunkSigning } from './aws-chunked.ts';
import { assertScope, parseAuthorizationV4, parseCredential, secretFor, type CredentialScope } from './credential.ts';
import type { QueryParam, RequestView } from '../model/request.ts';
import { dotSegmentError, dotSegmentForms, signatureMismatch } from './dot-segments.ts';
import { ALGORITHM, canonicalHeaders, canonicalQuery, canonicalRequest, canonicalUri, signature, signingKey, stringToSign, UNSIGNED_PAYLOAD } from './sigv4.ts';
import type { VerifyOptions } from './types.ts';

export const MAX_PRESIGNED_EXPIRES_S = 604800;

/** x-amz-* headers that only add integrity checks: harmless if a client leaves them unsigned. */
const UNSIGNED_OK = new Set([
  'x-amz-content-sha256',
  'x-amz-date',
  'x-amz-decoded-content-length',
  'x-amz-trailer',
  'x-amz-sdk-checksum-algorithm',
  'x-amz-checksum-mode',
  'x-amz-user-agent',
]);

export interface VerifiedV4 {
  accessKeyId: string;
  /** What aws-chunked needs to verify chunk signatures chained from this request's signature. */
  signing: ChunkSigning;
  /** The payload hash line that was signed (x-amz-content-sha256, X-Amz-Content-Sha256 or UNSIGNED-PAYLOAD). */
  payloadHash: string;
}

interface SignedParts {
  view: RequestView;
  /** Query parameter left out of the canonical query (the presigned signature). */
  excludeParam?: string;
  signedHeadersText: string;
  signedHeaders: readonly string[];
  provided: string;
  datetime: string;
  credential: CredentialScope;
  secret: string;
  payloadHash: string;
}

/** Verifies `Authorization: AWS4-HMAC-SHA256 ...`; `payloadHash` is the x-amz-content-sha256 line. */
export async function verifyHeaderV4(view: RequestView, payloadHash: string, opts: VerifyOptions): Promise<VerifiedV4> {
  const auth = parseAuthorizationV4(view.headers.get('authorization')!);
  const { datetime, time } = requestTime(view.headers);
  assertScope(auth.credential, datetime, opts.region, 'AuthorizationHeaderMalformed');
  const secret = secretFor(opts.credentials, auth.credential.accessKeyId);
  assertNotSkewed(time, opts.now ?? new Date(), opts.maxSkewMs ?? DEFAULT_MAX_SKEW_MS);
  if (!auth.signedHeaders.includes('host')) {
    throw new S3Error('AuthorizationHeaderMalformed', 'The authorization header is malformed; SignedHeaders must include host.');
  }
  assertAmzHeadersSigned(view.headers, auth.signedHeaders);
  const key = await verifySignature({
    view,
    signedHeadersText: auth.signedHeadersText,
    signedHeaders: auth.signedHeaders,
    provided: auth.signature,
    datetime,
    credential: auth.credential,
    secret,
    payloadHash,
  });
  return {
    accessKeyId: auth.credential.accessKeyId,
    signing: { key, datetime, scope: auth.credential.scope, seedSignature: auth.signature },
    payloadHash,
  };
}

/** Verifies a presigned SigV4 URL. */
export async function verifyPresignedV4(view: RequestView, opts: VerifyOptions): Promise<VerifiedV4> {
  const params = view.params;
  const fail = (message: string) => new S3Error('AuthorizationQueryParametersError', message);
  const algorithm = queryParam(params, 'X-Amz-Algorithm');
  const credentialText = queryParam(params, 'X-Amz-Credential');
  const datetime = queryParam(params, 'X-Amz-Date');
  const expiresText = queryParam(params, 'X-Amz-Expires');
  const signedHeadersText = queryParam(params, 'X-Amz-SignedHeaders');
  const signatureParam = queryParamEntry(params, 'X-Amz-Signature');
  if (!algorithm || !credentialText || !datetime || !expiresText || !signedHeadersText || !signatureParam) {
    throw fail(
      'Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.',
    );
  }
  if (algorithm !== ALGORITHM) throw fail('X-Amz-Algorithm only supports "AWS4-HMAC-SHA256"');
  const credential = parseCredential(credentialText, 'AuthorizationQueryParametersError');
  const time = parseAmzDate(datetime);
  if (!time) throw fail("X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"");
  if (/^-\d+$/.test(expiresText)) throw fail('X-Amz-Expires must be non-negative');
  if (!/^\d{1,7}$/.test(expiresText)) throw fail('X-Amz-Expires should be a number');
  const expiresS = Number(expiresText);
  if (expiresS > MAX_PRESIGNED_EXPIRES_S) {
    throw fail(`X-Amz-Expires must be less than a week (in seconds) that is ${MAX_PRESIGNED_EXPIRES_S}`);
  }
  if (!/^[0-9a-fA-F]{64}$/.test(signatureParam[1])) throw fail('X-Amz-Signature must be 64 hex digits');
  assertScope(credential, datetime, opts.region, 'AuthorizationQueryParametersError');
  const secret = secretFor(opts.credentials, credential.accessKeyId);

  const now = opts.now ?? new Date();
  if (time.getTime() - now.getTime() > (opts.maxSkewMs ?? DEFAULT_MAX_SKEW_MS)) {
    throw new S3Error('AccessDenied', 'Request is not valid yet');
  }
  const expiresAt = new Date(time.getTime() + expiresS * 1000);
  if (now.getTime() > expiresAt.getTime()) {
    throw new S3Error('AccessDenied', 'Request has expired', {
      'X-Amz-Expires': expiresText,
      Expires: expiresAt.toISOString(),
      ServerTime: now.toISOString(),
    });
  }

  const signedHeaders = signedHeadersText.split(';').map((h) => h.trim().toLowerCase());
  if (!signedHeaders.includes('host')) throw fail('X-Amz-SignedHeaders must include host');
  assertAmzHeadersSigned(view.headers, signedHeaders);
  const provided = signatureParam[1].toLowerCase();
  const payloadHash = queryParam(params, 'X-Amz-Content-Sha256') ?? UNSIGNED_PAYLOAD;
  const key = await verifySignature({
    view,
    excludeParam: signatureParam[0],
    signedHeadersText,
    signedHeaders,
    provided,
    datetime,
    credential,
    secret,
    payloadHash,
  });
  return {
    accessKeyId: credential.accessKeyId,
    signing: { key, datetime, scope: credential.scope, seedSignature: provided },
    payloadHash,
  };
}

/** The request time of header auth: x-amz-date, else Date (converted to the basic format). */
function requestTime(headers: Headers): { datetime: string; time: Date } {
  const amzDate = headers.get('x-amz-date');
  if (amzDate !== null) {
    const time = parseAmzDate(amzDate.trim());
    if (time) return { datetime: amzDate.trim(), time };
  } else {
    const date = headers.get('date');
    const time = date === null ? null : parseHttpDate(date);
    if (time) return { datetime: toAmzDate(time), time };
  }
  throw new S3Error('AccessDenied', 'AWS authentication requires a valid Date or x-amz-date header');
}

/** A signed header's value; `host` is the authority the client addressed. */
function headerLookup(view: RequestView): (name: string) => string | null {
  return (name) => (name === 'host' ? view.authority : view.headers.get(name));
}

/**
 * `Expect: 100-continue` is answered by the platform (Cloudflare's edge, the local front) and does
 * not reach the Worker, yet a client may have signed it: aws-sdk-go v1 (rclone) does when it
 * re-signs a retried PutObject or UploadPart of more than 2 MB, so without this every such retry
 * failed. The header can only have said 100-continue (RFC 9110 §10.1.1), in one of the two
 * spellings SDKs send; it changes nothing the gateway does.
 */
const CONSUMED_EXPECT = ['100-continue', '100-Continue'];

/** The canonical headers block, or one per value an absent signed `expect` may have had. */
function canonicalHeaderForms(signedHeaders: readonly string[], lookup: (name: string) => string | null): string[] {
  if (!signedHeaders.includes('expect') || lookup('expect') !== null) return [canonicalHeaders(signedHeaders, lookup)];
  return CONSUMED_EXPECT.map((value) => canonicalHeaders(signedHeaders, (name) => (name === 'expect' ? value : lookup(name))));
}

/** First value of a presigning parameter; its name is matched exactly, then case-insensitively. */
function queryParamEntry(params: readonly QueryParam[], name: string): QueryParam | undefined {
  return params.find(([n]) => n === name) ?? params.find(([n]) => n.toLowerCase() === name.toLowerCase());
}

function queryParam(params: readonly QueryParam[], name: string): string | undefined {
  return queryParamEntry(params, name)?.[1];
}

/** AccessDenied (as AWS words it) if an x-amz-* header that changes the request was not signed. */
function assertAmzHeadersSigned(headers: Headers, signedHeaders: readonly string[]): void {
  const unsigned: string[] = [];
  headers.forEach((_, name) => {
    if (name.startsWith('x-amz-') && !name.startsWith('x-amz-checksum-') && !UNSIGNED_OK.has(name) && !signedHeaders.includes(name)) {
      unsigned.push(name);
    }
  });
  if (unsigned.length > 0) {
    throw new S3Error('AccessDenied', 'There were headers present in the request which were not signed', {
      HeadersNotSigned: unsigned.join(', '),
    });
  }
}

/**
 * Recomputes the signature; returns the signing key when it matches. Else InvalidURI when it
 * matches a dot-segment form of the path (the platform resolved it), else SignatureDoesNotMatch.
 */
async function verifySignature(parts: SignedParts): Promise<CryptoKey> {
  const { credential, datetime, view } = parts;
  const key = await signingKey(parts.secret, credential.date, credential.region, credential.service);
  const query = canonicalQuery(view.params, parts.excludeParam);
  const headerForms = canonicalHeaderForms(parts.signedHeaders, headerLookup(view));
  const matches = async (uri: string, headers: string) => {
    const canonical = canonicalRequest(view.method, uri, query, headers, parts.signedHeadersText, parts.payloadHash);
    const toSign = await stringToSign(datetime, credential.scope, canonical);
    return { canonical, toSign, ok: timingSafeEqual(await signature(key, toSign), parts.provided) };
  };
  const rawPath = view.target.rawPath;
  const uris = rawPath === canonicalUri(rawPath) ? [rawPath] : [canonicalUri(rawPath), rawPath];
  let first: Awaited<ReturnType<typeof matches>> | undefined;
  for (const headers of headerForms) {
    for (const uri of uris) {
      const tried = await matches(uri, headers);
      if (tried.ok) return key;
      first ??= tried;
    }
  }
  for (const form of dotSegmentForms(rawPath)) {
    for (const headers of headerForms) {
      if ((await matches(canonicalUri(form), headers)).ok) throw dotSegmentError(form);
    }
  }
  // A signed header that is absent (an `expect` the platform consumed is accounted for above).
  const lookup = headerLookup(view);
  const absent = parts.signedHeaders.filter((name) => name !== 'expect' && lookup(name) === null);
  throw signatureMismatch(
    {
      AWSAccessKeyId: credential.accessKeyId,
      StringToSign: first!.toSign,
      SignatureProvided: parts.provided,
      CanonicalRequest: first!.canonical,
    },
    absent,
  );
}
