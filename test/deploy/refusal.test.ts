/**
 * The gateway (worker/gateway.ts: what worker/index.ts serves) with wrangler.toml's development
 * config and no local-development signal, as `wrangler deploy` of the default file would run it:
 * every request is refused with 403 AccessDenied and a message saying why, a request signed with
 * the development key included; the reasons go to the log; the status route says so; the queue
 * and cron handlers (gatewayFor) refuse to work. With the signal, the same config builds the
 * gateway, which answers only requests that prove they were made on this machine: with the
 * signal set on a deployed Worker (any channel) the development key is still refused (issue 21). (In Node: index.ts itself imports cloudflare:workers; test/deploy/deployed.test.ts
 * runs it in workerd.)
 */
import { AwsClient } from 'aws4fetch';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { devConfigSource } from '../../dev/dev-config.ts';
import { appFor, gatewayFor } from '../../worker/gateway.ts';
import { DEV_CREDENTIAL, reviewDeployment } from '../../worker/config/deployment.ts';
import { parseConfig } from '../../worker/config/config.ts';
import { logRefusal, refusalMessage } from '../../worker/app/refusal.ts';

const bucketBinding = { put() {}, get() {}, head() {}, delete() {}, list() {} };
const devEnv = (extra: Record<string, unknown> = {}) =>
  ({
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
    expect(body).toContain(
      'its configuration is not fit for a deployed worker (12 problems, listed in the Worker&apos;s log: wrangler tail). The development key works only in local development (npm start).',
    );
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
    expect(await status.json()).toMatchObject({ service: 'shardgate', refused: true, problems: 12 });
    expect(() => gatewayFor(devEnv())).toThrow('shardgate refuses to run: 12 configuration problem(s)');
  });

  it('with SHARDGATE_LOCAL_DEV=1 the same config builds the local gateway, served to loopback requests only', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const env = devEnv({ SHARDGATE_LOCAL_DEV: '1' });
    const gateway = gatewayFor(env);
    expect(gateway.config.credentials.map((c) => c.accessKeyId)).toContain(DEV_CREDENTIAL.accessKeyId);
    // An unsigned request fails at the gateway's own gate (AccessDenied, not the refusal) when it is
    // local, and gets the refusal otherwise. (Nothing here reaches the catalog, which Node has not got.)
    const answer = async (url: string, headers: Record<string, string> = {}) => (await fetchOf(new Request(url, { headers }) as never, env, ctx)).text();
    for (const url of ['http://127.0.0.1:8787/bucket/key', 'http://localhost:8787/bucket/key', 'http://[::1]:8787/bucket/key']) {
      const body = await answer(url);
      expect(body, url).toContain('<Code>AccessDenied</Code>');
      expect(body, url).not.toContain('shardgate refuses every request');
    }
    expect(await answer('http://127.0.0.1:8787/bucket/key', { 'cf-connecting-ip': '::1' })).not.toContain('shardgate refuses every request');
  });
});

describe('SHARDGATE_LOCAL_DEV=1 on a deployed gateway (as a var, a secret or an [env] var: the Worker sees one env)', () => {
  it('the development key is still refused for every request that reached it over the network', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const env = devEnv({ SHARDGATE_LOCAL_DEV: '1' });
    const edge = { 'cf-connecting-ip': '203.0.113.7', 'cf-ray': '8f00000000000000-FRA' };
    for (const [url, headers] of [
      ['http://gateway.example/', {}],
      ['https://shardgate.acct.workers.dev/', edge],
      // a Host the edge would never route, or an absolute-form target naming loopback: the edge's own header gives it away
      ['http://127.0.0.1/', edge],
      ['http://localhost/', { 'cf-connecting-ip': '198.51.100.1' }],
      ['http://127.0.0.1.nip.io/', {}],
    ] as Array<[string, Record<string, string>]>) {
      const signed = await dev.sign(url, { method: 'GET', headers });
      const res = await fetchOf(signed as never, env, ctx);
      expect(res.status, url).toBe(403);
      expect(await res.text(), url).toContain('shardgate refuses every request');
    }
    const admin = await fetchOf(
      (await dev.sign('https://shardgate.acct.workers.dev/_shardgate/admin/collect', { method: 'POST', headers: edge })) as never,
      env,
      ctx,
    );
    expect(admin.status).toBe(403);
    const status = await fetchOf(new Request('https://shardgate.acct.workers.dev/_shardgate/status', { headers: edge }) as never, env, ctx);
    expect(await status.json()).toMatchObject({ refused: true });
  });
});

describe('the refusal says only what concerns its problems', () => {
  // A config fit for deployment but for one secret nobody set: nothing about local development.
  const config = parseConfig({
    backends: Array.from({ length: 6 }, (_, i) => ({
      id: `s${i}`,
      kind: 's3',
      domain: `provider/${i}`,
      endpoint: `https://s${i}.example.net`,
      bucket: 'shards',
      accessKeyId: 'AKID',
      secretAccessKeySecret: `S${i}_SECRET`,
    })),
    policies: { ec: { k: 4, m: 2 } },
    defaultPolicy: 'ec',
    credentials: [{ accessKeyId: 'ops', secretAccessKeySecret: 'OPS_SECRET', scope: { buckets: ['*'], actions: ['read', 'admin'] } }],
  });
  const secrets = Object.fromEntries([...Array.from({ length: 6 }, (_, i) => `S${i}_SECRET`), 'OPS_SECRET'].map((n) => [n, `value of ${n}`]));

  it('a missing secret: no sentence about the development key, no hint about local development', () => {
    const { S3_SECRET: _, ...unset } = secrets;
    const review = reviewDeployment(config, { OPS: {}, ...unset });
    expect(review.refusals).toEqual(['backend s3 names the secret S3_SECRET for its secret key, which is not set: run `wrangler secret put S3_SECRET`.']);
    expect(refusalMessage(review)).toBe(
      "shardgate refuses every request: its configuration is not fit for a deployed worker (1 problem, listed in the Worker's log: wrangler tail).",
    );
    const errors: string[] = [];
    vi.spyOn(console, 'error').mockImplementation((...a: unknown[]) => void errors.push(a.join(' ')));
    logRefusal(review);
    expect(errors.join('\n')).not.toMatch(/SHARDGATE_LOCAL_DEV|development/);
  });

  it('the development secret on a key of its own: the sentence about the development key is said', () => {
    const review = reviewDeployment(config, { OPS: {}, ...secrets, OPS_SECRET: DEV_CREDENTIAL.secretAccessKey });
    expect(review.refusals).toEqual([expect.stringContaining('the secret OPS_SECRET holds the development secret')]);
    expect(refusalMessage(review)).toMatch(
      /\(1 problem, listed in the Worker's log: wrangler tail\)\. The development key works only in local development \(npm start\)\.$/,
    );
  });
});
