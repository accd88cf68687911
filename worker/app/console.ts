/**
 * The web console's routes under `/_shardgate/console` (issue 45; docs/CONSOLE.md):
 *   GET /                      the page: an HTML shell with no inline script or style, whose
 *                              script and style come from the two routes below
 *   GET /assets/console-<sha>.js|.css
 *                              the console's bundle (console/ built by dev/console-build.ts into
 *                              app/console/assets.gen.ts), named by its hash so it may be cached for good
 *   GET /whoami                the signer's own access key id and scope, for a request signed with
 *                              a SigV4 Authorization header by any configured key (the console
 *                              starts a key scoped to prefixes at those prefixes, which it could not
 *                              list its way to)
 *   GET /usage?bucket=NAME     a bucket's usage and quota, read-only, for a key that may list the
 *                              whole bucket (quota-routes.ts consoleUsageRoute; docs/QUOTAS.md)
 * The page holds no data and no secret: everything it shows it reads from the S3 API of this same
 * origin, signing each request in the browser with the key the user typed (aws4fetch), so it can
 * do exactly what that key may and nothing more. The Content-Security-Policy allows scripts,
 * styles and requests from this origin only; the page cannot be framed.
 * Absent from the app when the config's `webConsole.enabled` is false (gateway.ts).
 */
import { Hono } from 'hono';
import { S3Error } from '../model/errors.ts';
import { requestView } from '../model/request.ts';
import type { AppEnv, Authenticate } from '../s3/context.ts';
import { CONSOLE_ASSETS } from './console/assets.gen.ts';
import { consoleUsageRoute } from './quota-routes.ts';
import type { Catalog } from '../catalog/ports.ts';

export const CONSOLE_PATH = '/_shardgate/console';

export interface ConsoleDeps {
  authenticate: Authenticate;
  /** The gateway's region: the page signs with it. */
  region: string;
  /** For `usage` (quota-routes.ts consoleUsageRoute); absent: no such route. */
  catalog?: Pick<Catalog, 'bucketUsage' | 'getBucketSettings'>;
}

/** Only this origin, no inline code, no framing, no form posts, no referrer (a presigned URL on the page stays on the page). */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const PAGE_HEADERS = {
  'content-security-policy': CONSOLE_CSP,
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
};

function escapeAttribute(s: string): string {
  return s.replace(/[&"<>]/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

export function consolePage(region: string): string {
  const a = CONSOLE_ASSETS;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>shardgate console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${CONSOLE_PATH}/assets/console-${a.styleHash}.css">
<script type="module" src="${CONSOLE_PATH}/assets/console-${a.scriptHash}.js"></script>
</head>
<body data-region="${escapeAttribute(region)}" data-base="${CONSOLE_PATH}">
<noscript>The shardgate console needs JavaScript.</noscript>
<div id="app" aria-live="polite"></div>
</body>
</html>
`;
}

export function createConsole(deps: ConsoleDeps): Hono<AppEnv> {
  const routes = new Hono<AppEnv>();
  const page = consolePage(deps.region);
  routes.get('/', (c) => c.html(page, 200, PAGE_HEADERS));

  routes.get('/assets/:file', (c) => {
    const a = CONSOLE_ASSETS;
    const file = c.req.param('file');
    const asset =
      file === `console-${a.scriptHash}.js`
        ? { body: a.script, type: 'text/javascript; charset=utf-8' }
        : file === `console-${a.styleHash}.css`
          ? { body: a.style, type: 'text/css; charset=utf-8' }
          : null;
    if (!asset) throw new S3Error('NoSuchKey', `no console asset ${file} (the page names the current ones)`);
    return c.body(asset.body, 200, {
      'content-type': asset.type,
      'cache-control': 'public, max-age=31536000, immutable',
      'x-content-type-options': 'nosniff',
    });
  });

  routes.get('/whoami', async (c) => {
    const request = c.req.raw;
    if (!/^AWS4-HMAC-SHA256 /.test(request.headers.get('authorization') ?? ''))
      throw new S3Error('AccessDenied', 'whoami answers a request signed with a SigV4 Authorization header');
    const auth = await deps.authenticate(request, requestView(request));
    if (!auth.accessKeyId || !auth.access || auth.signature !== 'sigv4-header') throw new S3Error('AccessDenied', 'whoami needs a signed request');
    return c.json({ accessKeyId: auth.accessKeyId, admin: auth.access.admin, grants: auth.access.grants }, 200, { 'cache-control': 'no-store' });
  });
  if (deps.catalog) routes.get('/usage', consoleUsageRoute({ authenticate: deps.authenticate, catalog: deps.catalog }));
  return routes;
}
