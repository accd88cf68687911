/**
 * One structured log line per request, as JSON on the console (what `wrangler tail` and Workers
 * Logs index as fields): request id, operation (AWS's name, or the operator route), bucket, key,
 * status, error code, bytes in and out (declared lengths), ms, and the backend calls the request
 * made. The same middleware counts the request in the isolate's meter and has the meter's counts
 * flushed to the shared record within a few seconds (ops/flusher.ts).
 * `ms` and `backendCalls` are measured up to the response headers: a streamed GET body goes on
 * after the line is written (the engine has opened the first unit's shards by then).
 */
import type { MiddlewareHandler } from 'hono';
import { OPERATOR_PREFIX } from './app.ts';
import { toS3Error } from './error-map.ts';
import type { OpsFlusher } from '../ops/flusher.ts';
import type { IsolateMeter, RequestTally } from '../ops/meter.ts';
import type { AppEnv } from '../s3/context.ts';

export interface RequestLogOptions {
  meter: IsolateMeter;
  flusher: OpsFlusher;
  /** Write the log line (config `ops.requestLogs`); counting happens either way. */
  log: boolean;
}

export function requestLog(o: RequestLogOptions): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const started = Date.now();
    const tally: RequestTally = { backendCalls: 0, backendErrors: 0 };
    await o.meter.withTally(tally, next);
    const path = new URL(c.req.url).pathname;
    const operator = path === OPERATOR_PREFIX || path.startsWith(OPERATOR_PREFIX + '/');
    const operation = operator
      ? `shardgate:${path.slice(OPERATOR_PREFIX.length + 1) || 'page'}`
      : (c.get('operation') ?? (c.req.method === 'OPTIONS' ? 'PreflightRequest' : 'Unknown'));
    const status = c.res.status;
    const bytesIn = c.get('auth')?.decodedContentLength ?? (Number(c.req.header('content-length') ?? 0) || 0);
    const bytesOut = c.req.method === 'HEAD' ? 0 : Number(c.res.headers.get('content-length') ?? 0) || 0;
    const ms = Date.now() - started;
    if (!operator) o.meter.s3Request(operation, status, bytesIn, bytesOut, ms, c.get('bucket') ?? undefined);
    if (o.log) {
      const line: Record<string, unknown> = {
        msg: 'request',
        requestId: c.get('requestId'),
        operation,
        method: c.req.method,
        bucket: c.get('bucket') ?? undefined,
        key: c.get('key') ?? undefined,
        status,
        error: c.error ? toS3Error(c.error).code : undefined,
        bytesIn,
        bytesOut,
        ms,
        backendCalls: tally.backendCalls,
        backendErrors: tally.backendErrors || undefined,
      };
      // console.error only for what may be a bug (500): a 503 during an outage is expected.
      (status === 500 ? console.error : console.log)(JSON.stringify(line));
    }
    try {
      o.flusher.schedule((p) => c.executionCtx.waitUntil(p));
    } catch {
      // No execution context (an app driven without one, as in some tests): the next request flushes.
    }
  };
}
