/**
 * THE authentication gate: every S3 request passes here before any handler runs.
 *
 * `verifyRequest` finds how the request is authenticated (SigV4 Authorization header, SigV4
 * presigned query, SigV2 presigned query, or nothing), verifies it against the known access
 * keys, and returns the body as a stream that is already decoded (aws-chunked removed) and that
 * ERRORS with the proper S3Error if a chunk signature, the payload SHA-256, the declared checksum,
 * the length or the framing turns out wrong. Whoever stores the stream must treat an error as
 * "store nothing". Errors found before the body (bad signature, expired URL, malformed headers)
 * are thrown from `verifyRequest` itself, as S3Error. With `verifyChecksum: false` the
 * x-amz-checksum-* comparison is left to the consumer, which hashes the bytes anyway
 * (`checksum.declared` hands it the value), so no byte is hashed twice.
 *
 * Spec: S3 API reference, "Authenticating Requests (AWS Signature Version 4)" (header, query,
 * chunked upload with and without trailers), "Signing and Authenticating REST Requests" (SigV2
 * query auth), "Checking object integrity". Error codes as AWS returns them.
 * Known gaps: SigV4a, SigV2 header auth (`AWS key:sig`), browser POST policy uploads, session
 * tokens (X-Amz-Security-Token is signed over but not checked against anything).
 */

import { S3Error } from '../model/errors.ts';
import { readContentMd5 } from '../model/checksums.ts';
import type { QueryParam, RequestView } from '../model/request.ts';
import { declaredChecksum, checksumView, payloadMode, presignedPayloadHash, storedContentEncoding, verifiedBody, type PayloadMode } from './payload.ts';
import { EMPTY_SHA256, UNSIGNED_PAYLOAD } from './sigv4.ts';
import type { AuthType, VerifiedRequest, VerifyOptions } from './types.ts';
import { verifyHeaderV2, verifyPresignedV2 } from './verify-v2.ts';
import { verifyHeaderV4, verifyPresignedV4, type VerifiedV4 } from './verify-v4.ts';

export type { VerifiedRequest, VerifyOptions } from './types.ts';

/**
 * Verifies `request` as `view` (model/request.ts) reads it: the view gives method, path, query
 * and headers, the request only its body. Throws S3Error, or returns who signed it and its
 * verifying body stream.
 */
export async function verifyRequest(request: Request, view: RequestView, opts: VerifyOptions): Promise<VerifiedRequest> {
  const { headers } = view;
  const authType = detectAuthType(headers, view.params);
  const contentMd5 = readContentMd5(headers);
  const sentPayloadHash = headers.get('x-amz-content-sha256')?.trim();

  let accessKeyId: string | null = null;
  let v4: VerifiedV4 | null = null;
  let mode: PayloadMode;
  switch (authType) {
    case 'sigv4-header': {
      const payloadHash = headerAuthPayloadHash(headers, request.body);
      mode = payloadMode(payloadHash);
      v4 = await verifyHeaderV4(view, payloadHash, opts);
      accessKeyId = v4.accessKeyId;
      break;
    }
    case 'sigv4-query':
      v4 = await verifyPresignedV4(view, opts);
      accessKeyId = v4.accessKeyId;
      mode = payloadMode(presignedPayloadHash(sentPayloadHash, v4.payloadHash));
      break;
    case 'sigv2-query':
      accessKeyId = await verifyPresignedV2(view, opts);
      mode = payloadMode(sentPayloadHash ?? UNSIGNED_PAYLOAD);
      break;
    case 'sigv2-header':
      accessKeyId = await verifyHeaderV2(view, opts);
      mode = payloadMode(sentPayloadHash ?? UNSIGNED_PAYLOAD);
      break;
    case 'anonymous':
      if (!opts.allowAnonymous) throw new S3Error('AccessDenied');
      mode = payloadMode(sentPayloadHash ?? UNSIGNED_PAYLOAD);
      break;
  }

  const declared = declaredChecksum(headers, mode, opts.createHasher, opts.verifyChecksum ?? true);
  // The view first: it hooks the settle callback that the body stream calls at its end.
  const checksum = checksumView(declared);
  const { body, decodedContentLength } = verifiedBody(headers, request.body, mode, declared, v4?.signing ?? null, opts.clientIdleMs, opts.stall);
  return {
    accessKeyId,
    authType,
    body,
    decodedContentLength,
    checksum,
    contentMd5,
    contentEncoding: storedContentEncoding(headers),
  };
}

/** Which scheme the request uses; mixing two is refused as AWS refuses it. */
export function detectAuthType(headers: Headers, params: readonly QueryParam[]): AuthType {
  const has = (name: string) => params.some(([n]) => n.toLowerCase() === name.toLowerCase());
  const v4Query = has('X-Amz-Algorithm') || has('X-Amz-Signature') || has('X-Amz-Credential');
  const v2Query = params.some(([n]) => n === 'AWSAccessKeyId' || n === 'Signature');
  const authorization = headers.get('authorization');
  if ((authorization !== null && (v4Query || v2Query)) || (v4Query && v2Query)) {
    throw new S3Error(
      'InvalidArgument',
      'Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature query string parameter or the Authorization header should be specified',
    );
  }
  if (authorization !== null) {
    const scheme = authorization.trim().split(/\s+/, 1)[0];
    if (scheme === 'AWS4-HMAC-SHA256') return 'sigv4-header';
    if (scheme === 'AWS') return 'sigv2-header';
    if (scheme === 'AWS4-ECDSA-P256-SHA256') throw new S3Error('NotImplemented', 'SigV4a (AWS4-ECDSA-P256-SHA256) is not supported.');
    throw new S3Error('InvalidArgument', 'Unsupported Authorization Type', { ArgumentName: 'Authorization', ArgumentValue: scheme });
  }
  if (v4Query) return 'sigv4-query';
  if (v2Query) return 'sigv2-query';
  return 'anonymous';
}

/**
 * The payload line of header auth: x-amz-content-sha256, which S3 requires. A request without
 * a body may omit it (generic SigV4 signers do): its payload hash is then the empty SHA-256.
 */
function headerAuthPayloadHash(headers: Headers, body: ReadableStream | null): string {
  const value = headers.get('x-amz-content-sha256');
  if (value !== null) return value.trim();
  if (body === null || headers.get('content-length') === '0') return EMPTY_SHA256;
  throw new S3Error('InvalidRequest', 'Missing required header for this request: x-amz-content-sha256');
}
