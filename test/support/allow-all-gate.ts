/**
 * A test-only authentication slot that accepts every request unsigned and hands the raw body
 * through, for Node tests of the app's own contracts (app.request(), no workerd). It cannot decode
 * aws-chunked bodies, so it refuses them (NotImplemented) instead of storing the framing.
 */
import { S3Error } from '../../worker/model/errors.ts';
import type { Authenticate } from '../../worker/s3/context.ts';

export const allowAllGate: Authenticate = async (request) => {
  const encoding = request.headers.get('content-encoding') ?? '';
  const payload = request.headers.get('x-amz-content-sha256') ?? '';
  if (/aws-chunked/i.test(encoding) || payload.startsWith('STREAMING-')) {
    throw new S3Error('NotImplemented', 'aws-chunked request bodies need the SigV4 gate (worker/auth).');
  }
  const length = request.headers.get('content-length');
  return { body: request.body, decodedContentLength: length !== null && /^\d+$/.test(length) ? Number(length) : null };
};
