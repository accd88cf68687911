/**
 * The gateway (worker/gateway.ts: what worker/index.ts serves) with wrangler.toml's development
 * config and no local-development signal, as `wrangler deploy` of the default file would run it:
 * every request is refused with 403 AccessDenied and a message saying why, a request signed with
 * the development key included; the reasons go to the log; the status route says so; the queue
 * and cron handlers (gatewayFor) refuse to work. With the signal, the same config builds the
 * gateway. (In Node: index.ts itself imports cloudflare:workers; test/deploy/deployed.test.ts
 * runs it in workerd.)
 */
import { AwsClient } from 'aws4fetch';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { devConfigSource } from '../../dev/dev-config.ts';
import { appFor, gatewayFor } from '../../worker/gateway.ts';
import { DEV_CREDENTIAL } from '../../worker/deployment.ts';

const bucketBinding = { put() {}, get() {}, head() {}, delete() {}, list() {} };
const devEnv = (extra: Record<string, unknown> = {}) => ({
  SHARDGATE_CONFIG: devConfigSource(),
  CATALOG: {},
  ...Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`SHARD_${i}`, bucketBinding])),
  ...extra,
}) as never;
const ctx = { waitUntil() {}, passThroughOnException() {}, props: {} } as unknown as ExecutionContext;
const dev = new AwsClient({ ...DEV_CREDENTIAL, service: 's3', region: 'us-east-1', retries: 0 });

afterEach(() => vi.restoreAllMocks());

const fetchOf = (request: Request, env: never, c: ExecutionContext) => appFor(env).fetch(request, env, c);

describe('a deployed gateway with the development config', () => {
  it('refuses a request signed with the development key: 403 AccessDenied, why in the message, the reasons in the log', async () => {
    const errors: string[] = [];
    vi.spyOn(console, 'error').mockImplementation((...a: unknown[]) => void errors.push(a.join(' ')));
    vi.spyOn(console, 'warn').mockImplementation(() => {});
    const request = await dev.sign('http://gateway.example/', { method: 'GET' });
    const res = await fetchOf(request as never, devEnv(), ctx);
    expect(res.status).toBe(403);
    const body = await res.text();
    expect(body).toContain('<Code>AccessDenied</Code>');
    expect(body).toContain("its configuration is not fit for a deployed worker (7 problems, listed in the Worker&apos;s log: wrangler tail). The development key works only in local development (npm start).");
    expect(res.headers.get('x-amz-request-id')).toMatch(/^[0-9A-F]{16}$/);
    const log = errors.join('\n');
    expect(log).toContain('shardgate: REFUSING every request: the configuration is not fit for a deployed worker:');
    expect(log).toContain('  - access key shardgate-dev is the development key, which everyone knows');
    expect(log).toContain('  - backend local-0 is in failure domain local/zone-0');
  });

  it('refuses anonymous requests, CORS preflights and the admin API too; the status route says it is refused', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    vi.spyOn(console, 'warn').mockImplementation(() => {});
    for (const req of [
      new Request('http://gateway.example/bucket/key'),
      new Request('http://gateway.example/bucket/key', { method: 'OPTIONS', headers: { origin: 'https://a.example', 'access-control-request-method': 'GET' } }),
      await dev.sign('http://gateway.example/_shardgate/admin/collect', { method: 'POST' }),
    ]) {
      const res = await fetchOf(req as never, devEnv(), ctx);
      expect(res.status, `${req.method} ${req.url}`).toBe(403);
      expect(await res.text()).toContain('shardgate refuses every request');
    }
    const status = await fetchOf(new Request('http://gateway.example/_shardgate/status') as never, devEnv(), ctx);
    expect(status.status).toBe(503); // alive, but serving nothing: a health check must see it failing
    expect(await status.json()).toMatchObject({ service: 'shardgate', refused: true, problems: 7 });
    expect(() => gatewayFor(devEnv())).toThrow('shardgate refuses to run: 7 configuration problem(s)');
  });

  it('with SHARDGATE_LOCAL_DEV=1 the same config builds the local gateway', async () => {
    // (Its status would read the catalog, which this Node env has not got: the gateway is enough.)
    const env = devEnv({ SHARDGATE_LOCAL_DEV: '1' });
    const gateway = gatewayFor(env);
    expect(appFor(env)).toBe(gateway.app);
    expect(gateway.config.credentials.map((c) => c.accessKeyId)).toContain(DEV_CREDENTIAL.accessKeyId);
  });
});
