/**
 * The request payload after authentication: which `x-amz-content-sha256` form the client used,
 * which checksum it declared, and the body stream that verifies both while it is read.
 *
 * Spec: S3 "Authenticating Requests (AWS Signature Version 4)" payload options:
 *   <64 hex>                                   whole-body SHA-256, verified at the end
 *   UNSIGNED-PAYLOAD                           nothing signed (a checksum header may still apply)
 *   STREAMING-AWS4-HMAC-SHA256-PAYLOAD         aws-chunked, every chunk signed
 *   STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER aws-chunked, chunks and trailer signed
 *   STREAMING-UNSIGNED-PAYLOAD-TRAILER         aws-chunked, unsigned; the trailer checksum is
 *                                              the only integrity check, so one is required
 * and "Checking object integrity" for x-amz-checksum-* / x-amz-trailer.
 * Known gaps: the SigV4a forms (STREAMING-AWS4-ECDSA-P256-SHA256-*) answer NotImplemented.
 */

import { S3Error } from '../model/errors.ts';
import { AwsChunkedDecoder, type ChunkSigning } from './aws-chunked.ts';
import { assertChecksumValue, checksumAlgorithmOf, type ChecksumAlgorithm, type HasherFactory } from '../model/checksums.ts';
import type { ChecksumCheck } from './checksum.ts';
import { verifyingBody, type BodyStall } from './body-stream.ts';
import { plainBodySteps, verifyEmptyBody } from './plain-body.ts';
import { UNSIGNED_PAYLOAD } from './sigv4.ts';
import type { RequestChecksum } from './types.ts';

export type PayloadMode = { kind: 'sha256'; hex: string } | { kind: 'unsigned' } | { kind: 'streaming'; signed: boolean; trailer: boolean };

/** Classifies an x-amz-content-sha256 value; InvalidArgument for anything else. */
export function payloadMode(value: string): PayloadMode {
  switch (value) {
    case UNSIGNED_PAYLOAD:
      return { kind: 'unsigned' };
    case 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD':
      return { kind: 'streaming', signed: true, trailer: false };
    case 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER':
      return { kind: 'streaming', signed: true, trailer: true };
    case 'STREAMING-UNSIGNED-PAYLOAD-TRAILER':
      return { kind: 'streaming', signed: false, trailer: true };
    case 'STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD':
    case 'STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD-TRAILER':
      throw new S3Error('NotImplemented', 'SigV4a (ECDSA) streaming payloads are not supported.');
  }
  if (/^[0-9a-fA-F]{64}$/.test(value)) return { kind: 'sha256', hex: value.toLowerCase() };
  throw new S3Error(
    'InvalidArgument',
    'x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-UNSIGNED-PAYLOAD-TRAILER, STREAMING-AWS4-HMAC-SHA256-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER or a valid sha256 value.',
    { ArgumentName: 'x-amz-content-sha256', ArgumentValue: value },
  );
}

/**
 * The payload line of a presigned SigV4 request. The URL signs one (X-Amz-Content-Sha256, else
 * UNSIGNED-PAYLOAD). An unsigned URL lets an x-amz-content-sha256 header ask for more (a digest
 * to verify, an aws-chunked body with a trailer checksum); a URL that pins a value is held to it:
 * a header naming another value is SignatureDoesNotMatch, as the canonical request AWS would build
 * from that header is not the one signed.
 */
export function presignedPayloadHash(header: string | undefined, signed: string): string {
  if (header === undefined || signed === UNSIGNED_PAYLOAD) return header ?? signed;
  if (header === signed || (/^[0-9a-fA-F]{64}$/.test(signed) && header.toLowerCase() === signed.toLowerCase())) return signed;
  throw new S3Error('SignatureDoesNotMatch', `The presigned URL signs X-Amz-Content-Sha256 ${signed}; the x-amz-content-sha256 header may not change it.`);
}

/** Content-Encoding without the aws-chunked token (which is S3 framing, not the object's). */
export function storedContentEncoding(headers: Headers): string | null {
  const tokens = (headers.get('content-encoding') ?? '')
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '' && t.toLowerCase() !== 'aws-chunked');
  return tokens.length > 0 ? tokens.join(', ') : null;
}

interface DeclaredChecksum {
  check: ChecksumCheck | null;
  location: 'header' | 'trailer';
  trailerNames: string[];
}

/**
 * The checksum the client declared: one x-amz-checksum-<alg> header, or one x-amz-checksum-<alg>
 * named in x-amz-trailer (aws-chunked trailer modes only). Anything else is refused as AWS does.
 */
export function declaredChecksum(headers: Headers, mode: PayloadMode, createHasher: HasherFactory, verify = true): DeclaredChecksum {
  const check = (algorithm: ChecksumAlgorithm, expectedBase64: string | null): ChecksumCheck => ({
    algorithm,
    hasher: verify ? createHasher(algorithm) : null,
    expectedBase64,
  });
  const inHeaders: Array<[string, string]> = [];
  headers.forEach((value, name) => {
    if (checksumAlgorithmOf(name)) inHeaders.push([name, value]);
  });
  const trailerNames = (headers.get('x-amz-trailer') ?? '')
    .split(',')
    .map((t) => t.trim().toLowerCase())
    .filter((t) => t !== '');
  if (trailerNames.length > 0 && !(mode.kind === 'streaming' && mode.trailer)) {
    throw new S3Error('MalformedTrailerError', 'x-amz-trailer needs an aws-chunked body with a trailer (STREAMING-*-TRAILER).');
  }
  for (const name of trailerNames) {
    if (!checksumAlgorithmOf(name)) throw new S3Error('InvalidRequest', 'The value specified in the x-amz-trailer header is not supported');
  }
  if (inHeaders.length + trailerNames.length > 1) {
    throw new S3Error('InvalidRequest', 'Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.');
  }
  if (inHeaders.length === 1) {
    const [name, value] = inHeaders[0];
    const algorithm = checksumAlgorithmOf(name)!;
    // "-N" allowed: CompleteMultipartUpload carries the composite value S3 returns ("<base64>-N");
    // on any other request the value cannot match the body, and the consumer refuses it (BadDigest).
    assertChecksumValue(algorithm, value, 'header', true);
    return { check: check(algorithm, value), location: 'header', trailerNames };
  }
  if (trailerNames.length === 1) {
    const algorithm = checksumAlgorithmOf(trailerNames[0])!;
    return { check: check(algorithm, null), location: 'trailer', trailerNames };
  }
  return { check: null, location: 'header', trailerNames };
}

/** A read-only view of a check for the caller (its value fills in when a trailer is read). */
export function checksumView(declared: DeclaredChecksum): RequestChecksum | null {
  const check = declared.check;
  if (!check) return null;
  const settled = new Promise<string | null>((resolve) => {
    check.settle = resolve;
  });
  return {
    algorithm: check.algorithm,
    location: declared.location,
    get expectedBase64() {
      return check.expectedBase64;
    },
    declared: settled,
    verified: check.hasher !== null,
  };
}

function parseLength(value: string | null, header: string): number | null {
  if (value === null) return null;
  if (!/^\d{1,15}$/.test(value.trim())) {
    throw new S3Error('InvalidArgument', `Invalid ${header}.`, { ArgumentName: header, ArgumentValue: value });
  }
  return Number(value.trim());
}

export interface VerifiedBody {
  body: ReadableStream<Uint8Array> | null;
  decodedContentLength: number | null;
}

/**
 * Wraps the request body in the stream that decodes and verifies it according to `mode`
 * (body-stream.ts: a client that hangs up is told apart from a bug there).
 */
export function verifiedBody(
  headers: Headers,
  rawBody: ReadableStream<Uint8Array> | null,
  mode: PayloadMode,
  declared: DeclaredChecksum,
  signing: ChunkSigning | null,
  idleMs?: number,
  stall?: BodyStall,
): VerifiedBody {
  if (mode.kind === 'streaming') {
    if (mode.signed && !signing) {
      throw new S3Error('AccessDenied', 'A signed streaming payload needs a SigV4-signed request.');
    }
    const decodedContentLength = parseLength(headers.get('x-amz-decoded-content-length'), 'x-amz-decoded-content-length');
    if (decodedContentLength === null) {
      throw new S3Error('MissingContentLength', 'You must provide the x-amz-decoded-content-length header with an aws-chunked body.');
    }
    if (mode.trailer && !mode.signed && declared.trailerNames.length === 0) {
      // Nothing else would vouch for the bytes: AWS refuses this form without a declared trailer.
      throw new S3Error('InvalidRequest', 'STREAMING-UNSIGNED-PAYLOAD-TRAILER requires an x-amz-trailer header.');
    }
    if (!rawBody) throw new S3Error('IncompleteBody', 'The request body terminated unexpectedly');
    const decoder = new AwsChunkedDecoder({
      decodedContentLength,
      signing: mode.signed ? signing : null,
      trailer: mode.trailer,
      trailerNames: declared.trailerNames,
      checksum: declared.check,
    });
    const framed = headers.get('content-length');
    return {
      body: verifyingBody(
        rawBody,
        (piece) => decoder.push(piece),
        () => decoder.finish(),
        idleMs,
        stall,
        framed !== null && /^\d{1,15}$/.test(framed) ? Number(framed) : null,
      ),
      decodedContentLength,
    };
  }
  const contentLength = parseLength(headers.get('content-length'), 'Content-Length');
  const checks = {
    contentLength,
    sha256Hex: mode.kind === 'sha256' ? mode.hex : null,
    checksum: declared.check,
  };
  if (!rawBody) {
    verifyEmptyBody(checks);
    return { body: null, decodedContentLength: 0 };
  }
  const { step, finish } = plainBodySteps(checks);
  return { body: verifyingBody(rawBody, step, finish, idleMs, stall, contentLength), decodedContentLength: contentLength };
}
