/**
 * The gateway's Hono app: request id -> authentication gate -> operation detection -> handler,
 * with one onError that renders S3Error as AWS's XML (unknown errors become InternalError).
 * Routing is not Hono's: S3 needs the raw path and the query flags, so one catch-all route hands
 * over to worker/s3 (operations.ts detects, router.ts maps). HEAD is detected from the raw method
 * (Hono dispatches HEAD to GET routes and then drops the body): HeadObject never opens data.
 * Spec: S3 "Error responses"; every response carries x-amz-request-id and x-amz-id-2.
 */
import { Hono } from 'hono';
import type { ObjectStore } from './model/object-store.ts';
import { parseS3Config, type S3ConfigInput } from './s3/config.ts';
import type { AppEnv, Authenticate } from './s3/context.ts';
import { toS3Error } from './error-map.ts';
import { S3Error } from './model/errors.ts';
import { drainRequestBody } from './s3/drain.ts';
import { detectOperation } from './s3/operations.ts';
import { effectiveHeaders, parseS3Address, splitRawUrl } from './s3/request.ts';
import { S3_HANDLERS } from './s3/router.ts';

export interface AppOptions {
  store: ObjectStore;
  /** The verification gate: worker/auth's verifier, or passThroughAuthenticate in development. */
  authenticate: Authenticate;
  config?: S3ConfigInput;
}

/** S3 refuses request header sections over 8 KiB; headers the platform adds do not count. */
const MAX_HEADER_SECTION = 8 * 1024;

function checkHeaderSection(headers: Headers): void {
  let size = 0;
  headers.forEach((value, name) => {
    if (!/^(cf-|x-forwarded-|x-real-ip$)/.test(name)) size += name.length + value.length + 4;
  });
  if (size > MAX_HEADER_SECTION) {
    throw new S3Error('RequestHeaderSectionTooLarge', undefined, { MaxSizeAllowed: String(MAX_HEADER_SECTION) });
  }
}

/** What the client sent: Cloudflare replaces Accept-Encoding before the Worker sees it. */
export function clientAcceptEncoding(request: Request): string {
  const cf = (request as { cf?: { clientAcceptEncoding?: unknown } }).cf;
  return typeof cf?.clientAcceptEncoding === 'string' ? cf.clientAcceptEncoding : (request.headers.get('accept-encoding') ?? '');
}

function randomId(bytes: number, hex: boolean): string {
  const b = crypto.getRandomValues(new Uint8Array(bytes));
  return hex ? [...b].map((x) => x.toString(16).padStart(2, '0')).join('').toUpperCase() : btoa(String.fromCharCode(...b));
}

export function createApp(options: AppOptions): Hono<AppEnv> {
  const config = parseS3Config(options.config);
  const app = new Hono<AppEnv>();

  app.use(async (c, next) => {
    const requestId = randomId(8, true);
    c.set('requestId', requestId);
    c.set('resource', splitRawUrl(c.req.raw.url).rawPath);
    await next();
    c.res.headers.set('x-amz-request-id', requestId);
    c.res.headers.set('x-amz-id-2', randomId(24, false));
    // S3 bodies are byte-exact with their Content-Length; stop the platform from gzipping them
    // for clients that accept compression (Cloudflare does for text-like types, and so does
    // wrangler dev). A stored Content-Encoding is returned as it is.
    if (c.res.body && !c.res.headers.has('content-encoding') && /\b(gzip|br|deflate|zstd)\b/i.test(clientAcceptEncoding(c.req.raw))) {
      c.res.headers.set('content-encoding', 'identity');
    }
  });

  app.use(async (c, next) => {
    checkHeaderSection(c.req.raw.headers);
    c.set('auth', await options.authenticate(c.req.raw, c.req.raw.url));
    await next();
  });

  app.all('*', async (c) => {
    const request = c.req.raw;
    const addr = parseS3Address(request.url, request.headers.get('host'), config.baseDomains);
    c.set('resource', addr.resource);
    const headers = effectiveHeaders(request.headers, addr.query);
    const op = detectOperation(request.method, addr, headers);
    const { bucket, key, query } = addr;
    return S3_HANDLERS[op]({ op, request, headers, bucket, key, query, auth: c.var.auth, store: options.store, config, requestId: c.var.requestId });
  });

  app.onError(async (err, c) => {
    const error = toS3Error(err);
    const declared = c.var.auth?.decodedContentLength ?? (Number(c.req.raw.headers.get('content-length') ?? '') || null);
    await drainRequestBody(c.var.auth?.body ?? c.req.raw.body, declared, config.errorDrainBytes);
    if (error.code === 'InternalError') console.error('shardgate: unhandled error', err);
    const withBody = c.req.raw.method !== 'HEAD' && error.status !== 304;
    const headers: Record<string, string> = { ...error.headers };
    if (withBody) headers['Content-Type'] = 'application/xml';
    const body = withBody ? error.toXml(c.var.resource ?? '/', c.var.requestId ?? '') : null;
    return new Response(body, { status: error.status, headers });
  });

  return app;
}
