/**
 * The operator's read-only routes under `/_shardgate/` (next to admin.ts's POST actions):
 *   GET status[?hours=N]   the status document (ops/status.ts) as JSON; without a signature
 *                          (and without `ops.open`), health and totals only: no bucket names,
 *                          keys or error messages
 *   GET metrics            Prometheus text (ops/prometheus.ts); signed with SigV4 by a configured
 *                          access key, `Authorization: Bearer <ops.metricsTokenSecret's value>`,
 *                          or open with `ops.open`; otherwise AccessDenied
 *   GET / and GET ui       the status page (ops/page.ts): one self-contained HTML page that reads
 *                          `status` (signing it in the browser once given a key)
 * A privileged read (signed, bearer or open) probes the backends when the last probe is stale;
 * an unsigned status read never makes backend calls (harnesses poll it as a liveness check).
 * Signatures are checked by the same gate as S3 and admin requests; SigV2 is refused.
 */
import { Hono, type Context } from 'hono';
import { S3Error } from './model/errors.ts';
import { requestView } from './model/request.ts';
import { statusPage } from './ops/page.ts';
import { renderMetrics } from './ops/prometheus.ts';
import type { OpsService } from './ops/service.ts';
import type { AppEnv, Authenticate } from './s3/context.ts';

export interface OperatorDeps {
  authenticate: Authenticate;
  ops: OpsService;
  /** `ops.open`: metrics and the whole status without a signature. */
  open: boolean;
  /** The value of the secret `ops.metricsTokenSecret` names, if any. */
  metricsToken?: string;
}

/** True for a request signed (SigV4) by a configured key; false when it carries no signature. A bad signature throws. */
async function isSigned(c: Context<AppEnv>, authenticate: Authenticate): Promise<boolean> {
  const request = c.req.raw;
  const query = new URL(request.url).searchParams;
  const authorization = request.headers.get('authorization') ?? '';
  if (!/^AWS/i.test(authorization) && !query.has('X-Amz-Signature') && !query.has('Signature')) return false;
  const auth = await authenticate(request, requestView(request));
  if (auth.signature === 'sigv2-query' || auth.signature === 'sigv2-header') throw new S3Error('AccessDenied', 'the operator API accepts SigV4 only');
  return Boolean(auth.accessKeyId);
}

/** Constant-time string comparison (the token is a secret). */
function sameSecret(a: string, b: string): boolean {
  const x = new TextEncoder().encode(a), y = new TextEncoder().encode(b);
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

  routes.get('/status', async (c) => {
    const signed = (await isSigned(c, deps.authenticate)) || deps.open;
    const { doc } = await deps.ops.status({ signed, hours: hoursOf(c), probe: signed });
    return c.json(doc, 200, { 'cache-control': 'no-store' });
  });

  routes.get('/metrics', async (c) => {
    const bearer = /^Bearer (.+)$/i.exec(c.req.header('authorization') ?? '')?.[1];
    const allowed = deps.open || (bearer !== undefined && deps.metricsToken !== undefined && sameSecret(bearer, deps.metricsToken)) || (bearer === undefined && (await isSigned(c, deps.authenticate)));
    if (!allowed) throw new S3Error('AccessDenied', 'metrics need a SigV4 signature by a configured access key, or the bearer token of ops.metricsTokenSecret (or ops.open in the config)');
    const { doc, totals } = await deps.ops.status({ signed: true, hours: 0.1, probe: true });
    return c.body(renderMetrics(doc, totals), 200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'cache-control': 'no-store' });
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
