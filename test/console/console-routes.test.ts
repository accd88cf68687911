/**
 * The console's routes in the gateway's own app (worker/gateway.ts appFor, in Node, over stand-in
 * bindings: none of these routes reads the store): the page is an HTML shell with no inline script
 * or style, under a CSP that allows this origin only and no framing; its assets are served under
 * the names the page gives them and nothing else; whoami tells a signed key its own scope and
 * refuses unsigned, presigned or badly signed requests; `webConsole.enabled: false` removes every
 * console route while S3 and the status page stay.
 */
import { AwsClient } from 'aws4fetch';
import { describe, expect, it } from 'vitest';
import { appFor } from '../../worker/gateway.ts';
import { CONSOLE_ASSETS } from '../../worker/app/console/assets.gen.ts';
import { ROOT_KEY, SCOPED_KEY, consoleConfig } from './harness.ts';

const bucketBinding = { put() {}, get() {}, head() {}, delete() {}, list() {} };
const envOf = (config: object) =>
  ({
    SHARDGATE_CONFIG: JSON.stringify(config),
    SHARDGATE_LOCAL_DEV: '1',
    CATALOG: {},
    OPS: {},
    ...Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`SHARD_${i}`, bucketBinding])),
  }) as never;
const ctx = { waitUntil() {}, passThroughOnException() {}, props: {} } as unknown as ExecutionContext;
const ORIGIN = 'http://localhost:8787'; // a loopback host: the local-development config is served only there (deployment.ts)
const on = envOf(consoleConfig());
const off = envOf({ ...consoleConfig(), webConsole: { enabled: false } });
const call = (req: Request, env = on) => appFor(env).fetch(req, env, ctx);
const signer = (key: { accessKeyId: string; secretAccessKey: string }) => new AwsClient({ ...key, service: 's3', region: 'us-east-1', retries: 0 });

describe('the console routes', () => {
  it('the page: no inline script or style, this origin only, not frameable, not cached, no referrer', async () => {
    const res = await call(new Request(`${ORIGIN}/_shardgate/console`));
    expect(res.status).toBe(200);
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self';");
    expect(csp).toContain("style-src 'self';");
    expect(csp).toContain("connect-src 'self';");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|nonce-|https?:/);
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect(res.headers.get('cache-control')).toBe('no-store');
    const html = await res.text();
    // Every script and style element names a source; no attribute handlers, no style attributes.
    expect([...html.matchAll(/<script\b[^>]*>/g)].map((m) => m[0])).toEqual([
      `<script type="module" src="/_shardgate/console/assets/console-${CONSOLE_ASSETS.scriptHash}.js">`,
    ]);
    expect(html).not.toMatch(/<style|\son\w+=|\sstyle=/);
    expect(html).toContain(`href="/_shardgate/console/assets/console-${CONSOLE_ASSETS.styleHash}.css"`);
    expect(html).toContain('data-region="us-east-1"');
  });

  it('the assets: under the names the page gives, with their types and long caching; any other name is refused', async () => {
    const js = await call(new Request(`${ORIGIN}/_shardgate/console/assets/console-${CONSOLE_ASSETS.scriptHash}.js`));
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(js.headers.get('cache-control')).toContain('immutable');
    expect(await js.text()).toBe(CONSOLE_ASSETS.script);
    const css = await call(new Request(`${ORIGIN}/_shardgate/console/assets/console-${CONSOLE_ASSETS.styleHash}.css`));
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');
    expect(await css.text()).toBe(CONSOLE_ASSETS.style);
    const stale = await call(new Request(`${ORIGIN}/_shardgate/console/assets/console-0000000000000000.js`));
    expect(stale.status).toBe(404);
    expect(await stale.json()).toMatchObject({ code: 'NoSuchKey' });
  });

  it('whoami: a signed key reads its own scope; unsigned, presigned and badly signed requests are refused', async () => {
    const scoped = await call(await signer(SCOPED_KEY).sign(`${ORIGIN}/_shardgate/console/whoami`));
    expect(scoped.status).toBe(200);
    expect(await scoped.json()).toEqual({ accessKeyId: SCOPED_KEY.accessKeyId, admin: false, grants: SCOPED_KEY.scope });
    const root = await call(await signer(ROOT_KEY).sign(`${ORIGIN}/_shardgate/console/whoami`));
    expect(await root.json()).toMatchObject({ accessKeyId: ROOT_KEY.accessKeyId, admin: true });

    const unsigned = await call(new Request(`${ORIGIN}/_shardgate/console/whoami`));
    expect(unsigned.status).toBe(403);
    const presigned = await signer(SCOPED_KEY).sign(`${ORIGIN}/_shardgate/console/whoami`, { aws: { signQuery: true } });
    expect((await call(presigned)).status).toBe(403);
    const wrong = await call(await signer({ ...SCOPED_KEY, secretAccessKey: 'not-the-secret' }).sign(`${ORIGIN}/_shardgate/console/whoami`));
    expect(wrong.status).toBe(403);
    expect(await wrong.json()).toMatchObject({ code: 'SignatureDoesNotMatch' });
  });

  it('webConsole.enabled false: no page, no asset, no whoami; the status page is still served', async () => {
    for (const path of ['/_shardgate/console', `/_shardgate/console/assets/console-${CONSOLE_ASSETS.scriptHash}.js`, '/_shardgate/console/whoami']) {
      const res = await call(new Request(`${ORIGIN}${path}`), off);
      expect(res.status, path).toBe(400);
      expect(await res.json()).toMatchObject({ code: 'InvalidRequest' });
    }
    expect((await call(new Request(`${ORIGIN}/_shardgate/ui`), off)).status).toBe(200);
  });
});
