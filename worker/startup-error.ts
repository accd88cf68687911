/**
 * The answer to every request while the gateway cannot be built from its env: an invalid
 * SHARDGATE_CONFIG (the zod message names the field), a binding or secret it names that is not
 * set. In production this is seen on the first request after a deploy, so it must say what is
 * wrong where a client shows it: S3's XML InternalError carrying the message (awscli and the SDKs
 * print it once their retries are spent), JSON for the operator's routes, and one log line per
 * isolate and message for `wrangler tail`. Without this, workerd answers a plain-text 500 that
 * clients cannot parse.
 */
import { OPERATOR_PREFIX } from './app.ts';
import { S3Error } from './model/errors.ts';

const logged = new Set<string>();

export function startupFailure(request: Request, err: unknown): Response {
  const detail = String((err as Error)?.message ?? err);
  if (!logged.has(detail)) {
    logged.add(detail);
    console.error(JSON.stringify({ level: 'error', msg: 'shardgate cannot start', error: detail }));
  }
  const error = new S3Error('InternalError', `shardgate cannot start: ${detail}`);
  const requestId = [...crypto.getRandomValues(new Uint8Array(8))].map((b) => b.toString(16).padStart(2, '0')).join('').toUpperCase();
  const headers = { 'x-amz-request-id': requestId, 'cache-control': 'no-store' };
  const path = new URL(request.url).pathname;
  if (path === OPERATOR_PREFIX || path.startsWith(OPERATOR_PREFIX + '/')) {
    return Response.json({ code: error.code, message: error.message }, { status: 500, headers });
  }
  const body = request.method === 'HEAD' ? null : error.toXml(path, requestId);
  return new Response(body, { status: 500, headers: { ...headers, 'content-type': 'application/xml' } });
}
