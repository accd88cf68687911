/**
 * Parsing of what a SigV4 client says about itself: the `Authorization` header
 * (`AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/s3/aws4_request, SignedHeaders=a;b,
 * Signature=<hex>`) and the credential scope it carries (also in `X-Amz-Credential`), checked
 * against our access keys and region. Errors are AWS's: AuthorizationHeaderMalformed for the
 * header, AuthorizationQueryParametersError for presigned URLs, InvalidAccessKeyId.
 */

import { S3Error, type S3ErrorCode } from '../model/errors.ts';
import { isHex } from '../model/bytes.ts';

export interface CredentialScope {
  accessKeyId: string;
  date: string;
  region: string;
  service: string;
  /** `date/region/service/aws4_request` as sent. */
  scope: string;
}

export interface AuthorizationV4 {
  credential: CredentialScope;
  /** SignedHeaders exactly as sent (it is a line of the canonical request). */
  signedHeadersText: string;
  /** The same, split and lower-cased, to look the headers up. */
  signedHeaders: string[];
  signature: string;
}

type AuthErrorCode = Extract<S3ErrorCode, 'AuthorizationHeaderMalformed' | 'AuthorizationQueryParametersError'>;

/** Parses `AKID/date/region/service/aws4_request`. */
export function parseCredential(credential: string, errorCode: AuthErrorCode): CredentialScope {
  const parts = credential.trim().split('/');
  if (parts.length !== 5 || parts.some((p) => p === '') || parts[4] !== 'aws4_request' || !/^\d{8}$/.test(parts[1])) {
    throw new S3Error(errorCode, `The credential "${credential}" is malformed; expecting "<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request".`);
  }
  const [accessKeyId, date, region, service] = parts;
  if (service !== 's3') {
    throw new S3Error(errorCode, `The credential is malformed; incorrect service "${service}". This endpoint belongs to "s3".`);
  }
  return { accessKeyId, date, region, service, scope: parts.slice(1).join('/') };
}

/** Parses an `AWS4-HMAC-SHA256 ...` Authorization header (components in any order, `,` or `, `). */
export function parseAuthorizationV4(header: string): AuthorizationV4 {
  const malformed = (why: string) => new S3Error('AuthorizationHeaderMalformed', `The authorization header is malformed; ${why}.`);
  const m = /^AWS4-HMAC-SHA256\s+(.*)$/s.exec(header.trim());
  if (!m) throw malformed('the authorization type must be AWS4-HMAC-SHA256');
  const fields = new Map<string, string>();
  for (const part of m[1].split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    fields.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).trim());
  }
  const credential = fields.get('credential');
  const signedHeadersText = fields.get('signedheaders');
  const signature = fields.get('signature');
  if (credential === undefined) throw malformed('the Credential parameter is missing');
  if (signedHeadersText === undefined || signedHeadersText === '') throw malformed('the SignedHeaders parameter is missing');
  if (signature === undefined || !isHex(signature, 64)) throw malformed('the Signature parameter is missing or not 64 hex digits');
  return {
    credential: parseCredential(credential, 'AuthorizationHeaderMalformed'),
    signedHeadersText,
    signedHeaders: signedHeadersText.split(';').map((h) => h.trim().toLowerCase()),
    signature: signature.toLowerCase(),
  };
}

/** The secret of the access key, or InvalidAccessKeyId. */
export function secretFor(credentials: ReadonlyMap<string, string>, accessKeyId: string): string {
  const secret = credentials.get(accessKeyId);
  if (secret === undefined) throw new S3Error('InvalidAccessKeyId', undefined, { AWSAccessKeyId: accessKeyId });
  return secret;
}

/** Checks the scope's region (when the gateway has one) and that its date is the request's. */
export function assertScope(scope: CredentialScope, datetime: string, region: string | undefined, errorCode: AuthErrorCode): void {
  if (region !== undefined && scope.region !== region) {
    throw new S3Error(errorCode, `The region '${scope.region}' is wrong; expecting '${region}'`, { Region: region });
  }
  if (scope.date !== datetime.slice(0, 8)) {
    throw new S3Error(errorCode, 'Invalid credential date. Date is not the same as X-Amz-Date.');
  }
}
