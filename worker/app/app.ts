/**
 * The gateway's Hono app: request ids on every response; `/_shardgate/status`, the web console
 * (`/_shardgate/console`) and the operator's `/_shardgate/admin/*` sub-app (paths no bucket can have: bucket names cannot contain "_");
 * everything else is S3: authentication gate -> operation detection -> handler. ONE onError
 * renders every failure: S3Error (and whatever error-map.ts turns into one) as AWS's XML for S3
 * requests, as JSON `{code, message}` for the operator's routes.
 * S3 routing is not Hono's: S3 needs the raw path and the query flags, so one catch-all route
 * builds the request view (model/request.ts) ONCE, hands it to the gate and then to worker/s3
 * (operations.ts detects, authorize.ts checks the signer's scope, policy-gate.ts the bucket's
 * policy, router.ts maps): what was verified is what is routed, and only what the key may do. HEAD is detected
 * from the raw method (Hono dispatches HEAD to GET routes and then drops the body): HeadObject
 * never opens data. A client that hangs up mid-body is logged as such, not as an error.
 * CORS (s3/cors.ts): an OPTIONS preflight is answered before the authentication gate (browsers
 * never sign one), and every S3 response to a request with an Origin gets the Access-Control-*
 * headers its bucket's rules allow, error responses included.
 * Spec: S3 "Error responses"; every response carries x-amz-request-id and x-amz-id-2.
 */
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { toS3Error } from './error-map.ts';
import { ANONYMOUS_ACCESS } from '../model/access.ts';
import { isClientAbort, S3Error } from '../model/errors.ts';
import { RequestScope } from './request-scope.ts';
import { accessLogging } from './access-log.ts';
import type { AccessLogDelivery } from '../upkeep/access-log.ts';
import type { ObjectStore } from '../model/object-store.ts';
import { requestView } from '../model/request.ts';
import { refuseExposedCustomerKey, secureTransport } from './sse-transport.ts';
import type { AppEnv, Authenticate, PostFormGate, S3Settings } from '../s3/context.ts';
import { authorize } from '../s3/authorize.ts';
import { enforceBucketPolicy } from '../s3/policy-gate.ts';
import { knownAccounts } from '../s3/acl-headers.ts';
import { refuseAccountPublicAccessBlock } from '../s3/account-public-access-block.ts';
import { addCorsHeaders, corsPreflight } from '../s3/cors.ts';
import { drainRequestBody } from '../s3/drain.ts';
import { detectOperation, isPostObject, refusePostObject } from '../s3/operations.ts';
import { PostObject } from '../s3/post-object.ts';
import { splitRawUrl } from '../model/raw-url.ts';
import { effectiveHeaders, parseS3Address } from '../s3/request.ts';
import { S3_HANDLERS } from '../s3/router.ts';
import type { CatalogLossGate } from './catalog-loss-gate.ts';
import { withEventOrigin } from '../model/event-origin.ts';
import type { BucketConfigStore } from '../model/bucket-config-store.ts';

export const OPERATOR_PREFIX = '/_shardgate';

export interface AppOptions {
  store: ObjectStore;
  /** The buckets' configuration (model/bucket-config-store.ts). */
  config: BucketConfigStore;
  /** The verification gate (auth-gate.ts over worker/auth). */
  authenticate: Authenticate;
  /** The gate of browser form uploads (POST Object; auth-gate.ts makePostFormGate); absent: NotImplemented. */
  postForm?: PostFormGate;
  settings: S3Settings;
  /** The operator's read-only routes (status, metrics, page), mounted at /_shardgate (operator.ts); absent: none. */
  operator?: Hono<AppEnv>;
  /** The web console, mounted at /_shardgate/console (console.ts); absent: none (`webConsole.enabled` false). */
  console?: Hono<AppEnv>;
  /** The operator's API, mounted at /_shardgate/admin (admin.ts); absent: none. */
  admin?: Hono<AppEnv>;
  /** Runs around every request (the gateway keeps background work alive with it). */
  around?: MiddlewareHandler<AppEnv>;
  /** Server access logs' delivery (access-log.ts); absent: no bucket's requests are logged. */
  accessLog?: AccessLogDelivery;
  /** Refuses writes to buckets whose catalog is lost (catalog-loss-gate.ts); absent: none refused. */
  catalogLoss?: CatalogLossGate;
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

/**
 * A client that sent `Expect: 100-continue` sends its body only once told to (workerd does not
 * answer 100-continue itself; the local front and Cloudflare's edge do): when nothing read the
 * body, draining it would only wait.
 */
function awaitsContinue(request: Request): boolean {
  return !request.bodyUsed && /^100-continue$/i.test(request.headers.get('expect')?.trim() ?? '');
}

/** The request's execution context; an app driven without one (some tests) has none. */
function executionContext(c: Context<AppEnv>): ExecutionContext | undefined {
  try {
    return c.executionCtx;
  } catch {
    return undefined;
  }
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0').toUpperCase());

/**
 * A request's two ids from one draw of randomness (each draw is a call into the platform's
 * generator; two per request and a hex string built through an array were 1.5% of a 64 KiB
 * PUT's Worker CPU): x-amz-request-id, 16 hex digits, and x-amz-id-2, 24 bytes in base64.
 */
function requestIds(): { requestId: string; id2: string } {
  const b = crypto.getRandomValues(new Uint8Array(32));
  let requestId = '';
  for (let i = 0; i < 8; i++) requestId += HEX[b[i]!];
  return { requestId, id2: btoa(String.fromCharCode(...b.subarray(8))) };
}

/** The client's address as Cloudflare states it (requestParameters.sourceIPAddress of an event). */
const clientAddress = (request: Request): string => request.headers.get('cf-connecting-ip') ?? '127.0.0.1';

export function createApp(options: AppOptions): Hono<AppEnv> {
  const { settings } = options;
  const app = new Hono<AppEnv>();

  app.use(async (c, next) => {
    const { requestId, id2 } = requestIds();
    c.set('requestId', requestId);
    c.set('resource', splitRawUrl(c.req.raw.url).rawPath);
    // The request's owner (request-scope.ts): the handler runs to its end even if the client
    // hangs up meanwhile, so whatever it acquired is given back.
    const scope = new RequestScope(c.req.raw.signal, executionContext(c));
    c.set('scope', scope);
    const handled = next();
    scope.waitUntil(handled);
    try {
      await handled;
    } finally {
      scope.handled();
    }
    c.res.headers.set('x-amz-request-id', requestId);
    c.res.headers.set('x-amz-id-2', id2);
    // S3 bodies are byte-exact with their Content-Length; stop the platform from gzipping them
    // for clients that accept compression (Cloudflare does for text-like types, and so does
    // wrangler dev). A stored Content-Encoding is returned as it is. HEAD too: workerd labels a
    // bodiless HEAD answer gzip otherwise, as if the object were stored so (the console shows it).
    if (
      (c.res.body || c.req.raw.method === 'HEAD') &&
      !c.res.headers.has('content-encoding') &&
      /\b(gzip|br|deflate|zstd)\b/i.test(clientAcceptEncoding(c.req.raw))
    ) {
      c.res.headers.set('content-encoding', 'identity');
    }
  });
  if (options.around) app.use(options.around);
  if (options.accessLog) app.use(accessLogging(options.accessLog));
  app.use(async (c, next) => {
    await next();
    if (!c.req.path.startsWith(OPERATOR_PREFIX + '/')) await addCorsHeaders(c.req.raw, c.res, options.config, settings);
  });

  if (options.admin) app.route(`${OPERATOR_PREFIX}/admin`, options.admin);
  if (options.console) app.route(`${OPERATOR_PREFIX}/console`, options.console);
  if (options.operator) {
    app.route(OPERATOR_PREFIX, options.operator);
    app.get(`${OPERATOR_PREFIX}/`, (c) => c.redirect(`${OPERATOR_PREFIX}/ui`, 302)); // the page, whose links are relative to /_shardgate/
  }
  if (options.operator || options.admin || options.console) {
    app.all(`${OPERATOR_PREFIX}/*`, (c) => {
      throw new S3Error('InvalidRequest', `no operator route ${c.req.method} ${new URL(c.req.url).pathname}`);
    });
  }

  app.all('*', async (c) => {
    const request = c.req.raw;
    checkHeaderSection(request.headers);
    if (request.method === 'OPTIONS') return corsPreflight(request, options.config, settings);
    const view = requestView(request, settings.baseDomains);
    refuseExposedCustomerKey(request, view); // SSE-C keys only in headers, only over TLS (sse-transport.ts)
    const addr = parseS3Address(view);
    c.set('resource', addr.resource);
    if (options.postForm && isPostObject(view.method, addr, view.headers)) {
      // Authenticated by its form, not by the request (s3/post-object.ts).
      c.set('operation', 'PostObject');
      c.get('scope').label = 'PostObject';
      c.set('bucket', addr.bucket);
      await options.catalogLoss?.check(view.method, addr.bucket);
      const origin = { op: 'PostObject', principal: 'anonymous', sourceIp: clientAddress(request), requestId: c.get('requestId') ?? '' };
      const gate = options.postForm;
      return withEventOrigin(origin, () =>
        PostObject({
          request,
          addr,
          hostBucket: view.hostBucket,
          gate,
          store: options.store,
          config: options.config,
          settings,
          secureTransport: secureTransport(request),
          setAuth: (auth) => {
            c.set('auth', auth);
            c.get('scope').tenant = auth.accessKeyId ?? `anonymous ${request.headers.get('cf-connecting-ip') ?? ''}`;
            origin.principal = auth.accessKeyId ?? 'anonymous';
          },
        }),
      );
    }
    const auth = await options.authenticate(request, view, c.get('scope'));
    // Whose share of the coding budget the request's leases count against (coding-budget.ts).
    c.get('scope').tenant = auth.accessKeyId ?? `anonymous ${request.headers.get('cf-connecting-ip') ?? ''}`;
    refusePostObject(view.method, addr, view.headers); // an app without a form gate (the refusal's gate answers first)
    c.set('auth', auth);
    const headers = effectiveHeaders(view);
    refuseAccountPublicAccessBlock(view.method, addr, headers); // S3 Control's account-level block: "not configured"
    const op = detectOperation(view.method, addr, headers);
    authorize(op, addr, headers, auth.access ?? ANONYMOUS_ACCESS);
    const { bucket, key, query } = addr;
    c.set('operation', op);
    c.get('scope').label = op;
    c.set('bucket', bucket);
    c.set('key', key);
    await options.catalogLoss?.check(view.method, bucket);
    const gate = await enforceBucketPolicy(options.store, options.config, {
      op,
      addr,
      headers,
      url: request.url,
      auth,
      region: settings.region,
      otherAccounts: settings.otherAccounts ?? false,
      knownAccount: knownAccounts(settings), // ACL headers are checked there (acl-headers.ts); CreateBucket's by its handler
    });
    c.set('aclRequired', gate.aclRequired);
    const origin = { op, principal: auth.accessKeyId ?? 'anonymous', sourceIp: clientAddress(request), requestId: c.get('requestId') ?? '' };
    return gate.run(() =>
      withEventOrigin(origin, () =>
        S3_HANDLERS[op]({
          op,
          request,
          headers,
          bucket,
          key,
          query,
          auth,
          store: options.store,
          config: options.config,
          settings,
          requestId: c.get('requestId'),
          scope: c.get('scope'),
          policy: gate.check,
          bucketOwner: gate.owner,
          bucketRows: gate.rows,
        }),
      ),
    );
  });

  app.onError(async (err, c) => {
    const error = toS3Error(err);
    c.get('scope')?.discardStream(err); // a body the handler had opened goes unsent
    // Drained (bounded, never waiting on a stall), the rest cancelled: the answer never waits for
    // a body. A client waiting for `100 Continue` sends nothing more: cancelled unread.
    const declared = c.get('auth')?.decodedContentLength ?? (Number(c.req.raw.headers.get('content-length') ?? '') || null);
    const drainBytes = awaitsContinue(c.req.raw) ? 0 : settings.errorDrainBytes;
    await drainRequestBody(c.get('auth')?.body ?? c.req.raw.body, declared, drainBytes);
    if (c.get('auth')?.body && !c.req.raw.body?.locked) await drainRequestBody(c.req.raw.body, 0, 0); // the gate's decoder did not take it: cancel
    if (error.code === 'InternalError') console.error('shardgate: unhandled error', err);
    else if (isClientAbort(error))
      console.log(`shardgate: client closed the connection mid-body (${c.req.raw.method} ${c.get('resource')}, request ${c.get('requestId')})`);
    if (new URL(c.req.url).pathname.startsWith(OPERATOR_PREFIX + '/')) {
      return c.json({ code: error.code, message: error.message }, error.status as 400);
    }
    const withBody = c.req.raw.method !== 'HEAD' && error.status !== 304;
    const headers: Record<string, string> = { ...error.headers };
    if (withBody) headers['Content-Type'] = 'application/xml';
    const body = withBody ? error.toXml(c.get('resource') ?? '/', c.get('requestId') ?? '') : null;
    return new Response(body, { status: error.status, headers });
  });

  return app;
}
