/**
 * The operator's read-only routes under `/_shardgate/` (next to admin.ts's POST actions):
 *   GET status[?hours=N]   the status document (ops/status.ts) as JSON; without a signature
 *                          (and without `ops.open`), health and totals only: no bucket names,
 *                          keys or error messages
 *   GET metrics            Prometheus text (ops/prometheus.ts); signed with a SigV4 header by a
 *                          key with the admin action (model/access.ts), `Authorization: Bearer <ops.metricsTokenSecret's value>`,
 *                          or open with `ops.open`; otherwise AccessDenied
 *   GET health             for a load balancer (ops/lb-health.ts): 200 ok/degraded, 503 when the
 *                          default policy's writes or reads cannot succeed from here; no
 *                          signature, no catalog read, at most one probe per backend per 15 s
 *   GET / and GET ui       the status page (ops/page.ts): one self-contained HTML page that reads
 *                          `status` (signing it in the browser once given a key)
 * A privileged read (signed, bearer or open) probes the backends when the last probe is stale;
 * an unsigned status read never makes backend calls (harnesses poll it as a liveness check) and
 * is answered from a document at most ANONYMOUS_STATUS_TTL_MS old (issue 21: each costs a catalog
 * read per bucket, and anyone may ask).
 * Signatures are checked by the same gate as S3 and admin requests; a signed read needs a key with
 * the admin action, in an Authorization header (presigned URLs and SigV2 are refused).
 */
import { Hono, type Context } from 'hono';
import { S3Error } from '../model/errors.ts';
import { requestView } from '../model/request.ts';
import { statusPage } from '../ops/page.ts';
import { renderMetrics } from '../ops/prometheus.ts';
import type { LoadBalancerHealth } from '../ops/lb-health.ts';
import type { OpsService } from '../ops/service.ts';
import type { AppEnv, Authenticate } from '../s3/context.ts';
import { IsolateShared } from '../model/isolate-shared.ts';

export interface OperatorDeps {
  authenticate: Authenticate;
  ops: OpsService;
  /** `ops.open`: metrics and the whole status without a signature. */
  open: boolean;
  /** The value of the secret `ops.metricsTokenSecret` names, if any. */
  metricsToken?: string;
  /** The load balancer's answer (absent: no /health route). */
  health?: LoadBalancerHealth;
  /** The clock of the anonymous status cache (tests). */
  now?: () => number;
}

/** How long an isolate reuses the anonymous status document: anyone may ask for it, and each costs a catalog read per bucket. */
export const ANONYMOUS_STATUS_TTL_MS = 5_000;

/**
 * True for a request signed with a SigV4 Authorization header by a key whose scope has the admin
 * action; false when it carries no signature. A bad signature, a presigned URL, SigV2 or a key
 * without admin throws AccessDenied.
 */
async function isSignedByAdmin(c: Context<AppEnv>, authenticate: Authenticate): Promise<boolean> {
  const request = c.req.raw;
  const query = new URL(request.url).searchParams;
  const authorization = request.headers.get('authorization') ?? '';
  if (!/^AWS/i.test(authorization) && ![...query.keys()].some((k) => /^(x-amz-(signature|credential|algorithm)|signature|awsaccesskeyid)$/i.test(k)))
    return false;
  const auth = await authenticate(request, requestView(request));
  if (!auth.accessKeyId) return false;
  if (auth.signature !== 'sigv4-header')
    throw new S3Error('AccessDenied', 'the operator routes accept SigV4 Authorization headers only (no presigned URLs, no SigV2)');
  if (!auth.access?.admin) throw new S3Error('AccessDenied', 'the status details and metrics need a key whose scope has the admin action');
  return true;
}

/** Constant-time string comparison (the token is a secret). */
function sameSecret(a: string, b: string): boolean {
  const x = new TextEncoder().encode(a),
    y = new TextEncoder().encode(b);
  let diff = x.length ^ y.length;
  for (let i = 0; i < Math.max(x.length, y.length); i++) diff |= (x[i] ?? 0) ^ (y[i] ?? 0);
  return diff === 0;
}

function hoursOf(c: Context<AppEnv>): number {
  const raw = c.req.query('hours');
  if (raw === undefined) return 1;
  const h = Number(raw);
  if (!Number.isFinite(h) || h < 0 || h > 24) throw new S3Error('InvalidArgument', 'hours is a number from 0 to 24');
  return h;
}

export function createOperator(deps: OperatorDeps): Hono<AppEnv> {
  const routes = new Hono<AppEnv>();

  const now = deps.now ?? Date.now;
  // By `hours`. Shared as settled documents, never as a promise another request waits on (model/isolate-shared.ts).
  const anonymous = new Map<number, IsolateShared<unknown>>();
  routes.get('/status', async (c) => {
    const signed = (await isSignedByAdmin(c, deps.authenticate)) || deps.open;
    const hours = hoursOf(c);
    if (signed) {
      const { doc } = await deps.ops.status({ signed, hours, probe: true });
      return c.json(doc, 200, { 'cache-control': 'no-store' });
    }
    // Unsigned: one document per isolate and `hours` every few seconds, however many ask (a failed one is not kept);
    // a request asking while another builds the next is given the last one, or, with none, waits for it up to 2 s before building its own.
    let shared = anonymous.get(hours);
    if (!shared)
      anonymous.set(hours, (shared = new IsolateShared({ freshMs: ANONYMOUS_STATUS_TTL_MS, staleMs: 2 * ANONYMOUS_STATUS_TTL_MS, waitMs: 2000, now })));
    const doc = await shared.get(async () => (await deps.ops.status({ signed: false, hours, probe: false })).doc);
    return c.json(doc, 200, { 'cache-control': `public, max-age=${ANONYMOUS_STATUS_TTL_MS / 1000}` });
  });

  routes.get('/metrics', async (c) => {
    const bearer = /^Bearer (.+)$/i.exec(c.req.header('authorization') ?? '')?.[1];
    const allowed =
      deps.open ||
      (bearer !== undefined && deps.metricsToken !== undefined && sameSecret(bearer, deps.metricsToken)) ||
      (bearer === undefined && (await isSignedByAdmin(c, deps.authenticate)));
    if (!allowed)
      throw new S3Error(
        'AccessDenied',
        'metrics need a SigV4 signature by a configured access key, or the bearer token of ops.metricsTokenSecret (or ops.open in the config)',
      );
    const { doc, totals } = await deps.ops.status({ signed: true, hours: 0.1, probe: true });
    return c.body(renderMetrics(doc, totals), 200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'cache-control': 'no-store' });
  });

  routes.get('/health', async (c) => {
    if (!deps.health) throw new S3Error('NoSuchKey', 'no health route on this gateway');
    const { code, body } = await deps.health.check();
    return c.json(body, code, { 'cache-control': 'no-store' });
  });

  const page = (c: Context<AppEnv>) => {
    const nonce = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(16))));
    return c.html(statusPage(nonce), 200, {
      'content-security-policy': `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
    });
  };
  routes.get('/', page);
  routes.get('/ui', page);
  return routes;
}
