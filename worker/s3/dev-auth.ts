/**
 * Development pass-through for the authentication slot: accepts every request unsigned and
 * hands the raw body through. ONLY for tests and local development, until worker/auth/verify.ts
 * (SigV4 + aws-chunked) lands; swap it in worker/index.ts (`authenticate: verify...`).
 * It cannot decode aws-chunked bodies, so it refuses them (NotImplemented) instead of storing
 * the framing as object data.
 */
import type { Authenticate } from './context.ts';
import { S3Error } from '../model/errors.ts';

export const passThroughAuthenticate: Authenticate = async (request) => {
  const encoding = request.headers.get('content-encoding') ?? '';
  const payload = request.headers.get('x-amz-content-sha256') ?? '';
  if (/aws-chunked/i.test(encoding) || payload.startsWith('STREAMING-')) {
    throw new S3Error('NotImplemented', 'aws-chunked request bodies need the SigV4 gate (worker/auth); the development pass-through cannot decode them.');
  }
  const length = request.headers.get('content-length');
  return { body: request.body, decodedContentLength: length !== null && /^\d+$/.test(length) ? Number(length) : null };
};
