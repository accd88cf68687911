/**
 * The answer to every request while the gateway cannot be built from its env: an invalid
 * SHARDGATE_CONFIG, a binding or secret it names that is not set. Clients get a generic S3
 * InternalError (JSON for the operator's routes) with a request id, never the reason: it can
 * quote the config (a JSON error shows the text around it) and names secrets. The reason goes to
 * the Worker's log (`wrangler tail`) with the same request id, once per isolate and message, and
 * the request id of every later answer is logged beside it, so an operator can match what a
 * client printed. Without this, workerd answers a plain-text 500 that clients cannot parse.
 */
import { OPERATOR_PREFIX } from './app.ts';
import { S3Error } from '../model/errors.ts';
import { errorMessage } from '../model/error-message.ts';

const logged = new Set<string>();

export function startupFailure(request: Request, err: unknown): Response {
  const detail = errorMessage(err);
  const requestId = [...crypto.getRandomValues(new Uint8Array(8))]
    .map((b) => b.toString(16).padStart(2, '0'))
    .join('')
    .toUpperCase();
  if (!logged.has(detail)) {
    logged.add(detail);
    console.error(JSON.stringify({ level: 'error', msg: 'shardgate cannot start', requestId, error: detail }));
  } else {
    console.error(JSON.stringify({ level: 'error', msg: 'shardgate cannot start (logged before)', requestId }));
  }
  const error = new S3Error(
    'InternalError',
    `shardgate cannot start: its configuration is broken (the reason is in the Worker's log with request id ${requestId}).`,
  );
  const headers = { 'x-amz-request-id': requestId, 'cache-control': 'no-store' };
  const path = new URL(request.url).pathname;
  if (path === OPERATOR_PREFIX || path.startsWith(OPERATOR_PREFIX + '/')) {
    return Response.json({ code: error.code, message: error.message, requestId }, { status: 500, headers });
  }
  const body = request.method === 'HEAD' ? null : error.toXml(path, requestId);
  return new Response(body, { status: 500, headers: { ...headers, 'content-type': 'application/xml' } });
}
