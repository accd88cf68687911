/**
 * The app's authentication slot, filled with worker/auth's verifier and the configured access
 * keys. Checksums are verified by the store while it hashes the body anyway (one pass), so the
 * gate only frames and signature-checks; Content-MD5 likewise.
 */
import { verifyRequest } from './auth/verify.ts';
import { createHasher } from './model/checksums.ts';
import type { Authenticate } from './s3/context.ts';
import { drainRequestBody } from './s3/drain.ts';

export interface GateConfig {
  credentials: { accessKeyId: string; secretAccessKey?: string; secretAccessKeySecret?: string }[];
  allowAnonymous: boolean;
}

export function makeAuthenticate(config: GateConfig, env: Record<string, unknown>): Authenticate {
  const credentials = new Map<string, string>();
  for (const c of config.credentials) {
    const secret = c.secretAccessKey ?? env[c.secretAccessKeySecret!];
    if (typeof secret !== 'string' || !secret) {
      throw new Error(`SHARDGATE_CONFIG: access key ${c.accessKeyId} names secret ${c.secretAccessKeySecret}, which is not set (wrangler secret put ${c.secretAccessKeySecret})`);
    }
    credentials.set(c.accessKeyId, secret);
  }
  return async (original, rawUrl) => {
    const request = withClientAcceptEncoding(original);
    let v: Awaited<ReturnType<typeof verifyRequest>>;
    try {
      v = await verifyRequest(request, { rawUrl, credentials, createHasher, verifyChecksum: false, allowAnonymous: config.allowAnonymous });
    } catch (err) {
      // A copied Request owns the body now: drain it here, or wrangler dev's proxy wedges
      // (app.ts onError drains only the original request's body).
      if (request !== original) {
        const length = request.headers.get('content-length');
        await drainRequestBody(request.body, length && /^\d+$/.test(length) ? Number(length) : null, 1024 * 1024);
      }
      throw err;
    }
    return {
      body: v.body,
      decodedContentLength: v.decodedContentLength,
      // Header checksums are read by the S3 layer from the headers; only a trailer's comes from here.
      checksum: v.checksum?.location === 'trailer' ? { algorithm: v.checksum.algorithm, expected: v.checksum.declared } : undefined,
      accessKeyId: v.accessKeyId ?? undefined,
    };
  };
}

/**
 * Cloudflare (and wrangler dev) replace Accept-Encoding with their own value before the Worker
 * runs; clients such as rclone (aws-sdk-go) sign the header they sent. The original is in
 * `request.cf.clientAcceptEncoding`: verify against that.
 */
function withClientAcceptEncoding(request: Request): Request {
  const sent = (request as { cf?: { clientAcceptEncoding?: unknown } }).cf?.clientAcceptEncoding;
  if (typeof sent !== 'string' || request.headers.get('accept-encoding') === sent) return request;
  const headers = new Headers(request.headers);
  if (sent === '') headers.delete('accept-encoding');
  else headers.set('accept-encoding', sent);
  return new Request(request, { headers });
}
