/**
 * The deployment review (worker/config/deployment.ts, worker/config/failure-domains.ts): what a deployed
 * gateway refuses to start with and what it warns about, config by config, the local-development
 * signal, and what a request must show to be served what the review refuses (issue 21).
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../worker/config/config.ts';
import { isLocalDevelopment, isLoopbackRequest, reviewDeployment } from '../../worker/config/deployment.ts';
import { devConfigSource } from '../../dev/dev-config.ts';

const r2 = (id: string, domain: string) => ({ id, kind: 'r2', domain, binding: `B_${id}` });
const s3 = (id: string, domain: string, extra: object = {}) => ({
  id,
  kind: 's3',
  domain,
  endpoint: `https://${id}.example.net`,
  bucket: 'b',
  accessKeyIdSecret: `${id}_KEY`,
  secretAccessKeySecret: `${id}_SECRET`,
  ...extra,
});
const SIX = [r2('r2a', 'cf/weur'), r2('r2b', 'cf/enam'), s3('aws', 'aws/fra'), s3('b2', 'b2/ams'), s3('wasabi', 'wasabi/ams'), s3('gcs', 'gcp/eu')];
const GOOD = {
  backends: SIX,
  policies: { ec: { k: 4, m: 2 } },
  defaultPolicy: 'ec',
  credentials: [{ accessKeyId: 'ops', secretAccessKeySecret: 'OPS_SECRET', scope: { buckets: ['*'], actions: ['read', 'list', 'write', 'delete', 'admin'] } }],
  encryption: { keys: [{ id: 'k1', secret: 'KEY_K1' }], active: 'k1' },
};
const A_KEY = btoa(String.fromCharCode(...Array.from({ length: 32 }, (_, i) => 3 * i + 1)));

/** The env a deployed Worker of `config` has: the ops record, every R2 binding and every secret it names. */
function envFor(config: { backends: object[]; credentials?: object[] }): Record<string, unknown> {
  const env: Record<string, unknown> = { OPS: {} };
  for (const b of config.backends as { binding?: string; accessKeyIdSecret?: string; secretAccessKeySecret?: string }[]) {
    if (b.binding) env[b.binding] = { put() {} };
    for (const name of [b.accessKeyIdSecret, b.secretAccessKeySecret]) if (name) env[name] = `value of ${name}`;
  }
  for (const c of (config.credentials ?? []) as { secretAccessKeySecret?: string }[])
    if (c.secretAccessKeySecret) env[c.secretAccessKeySecret] = 'a secret of my own';
  for (const k of (config as { encryption?: { keys: { secret?: string }[] } }).encryption?.keys ?? []) if (k.secret) env[k.secret] = A_KEY;
  return env;
}

function review(config: object, env?: Record<string, unknown>) {
  return reviewDeployment(parseConfig(config), env ?? envFor(config as { backends: object[] }));
}

describe('deployment review', () => {
  it('a multi-provider config with its secrets set passes, without warnings', () => {
    expect(review(GOOD)).toEqual({ refusals: [], warnings: [] });
    const { OPS: _, ...withoutOps } = envFor(GOOD);
    expect(review(GOOD, withoutOps)).toEqual({ refusals: [], warnings: [expect.stringMatching(/^no OPS Durable Object binding/)] });
  });

  it('encryption keys: only from secrets, never the development key, 32 bytes; none configured is a warning', () => {
    const { encryption: _e, ...clear } = GOOD;
    expect(review(clear).warnings).toEqual([expect.stringMatching(/^no "encryption" section: objects are stored in the clear/)]);
    expect(review({ ...GOOD, encryption: { keys: [{ id: 'k1', value: A_KEY }], active: 'k1' } }).refusals).toEqual([
      expect.stringMatching(/^encryption key "k1" is inline in SHARDGATE_CONFIG/),
    ]);
    expect(review(GOOD, { ...envFor(GOOD), KEY_K1: 'c2hhcmRnYXRlLWRldi1rZXktZW5jcnlwdGlvbi1rZXk=' }).refusals).toEqual([
      expect.stringMatching(/the published development key/),
    ]);
    const { KEY_K1: _k, ...unset } = envFor(GOOD);
    expect(review(GOOD, unset).refusals).toEqual([expect.stringMatching(/^encryption key "k1" names the secret KEY_K1, which is not set/)]);
    expect(review(GOOD, { ...envFor(GOOD), KEY_K1: 'too short' }).refusals).toEqual([expect.stringMatching(/^encryption key "k1" is not base64 of 32 bytes/)]);
    expect(() => parseConfig({ ...GOOD, encryption: { keys: [{ id: 'k1', secret: 'KEY_K1' }], active: 'k2' } })).toThrow(
      /encryption.active is "k2", which is not among encryption.keys/,
    );
  });

  it("refuses wrangler.toml's development config: the development key and the local pool", () => {
    const { refusals } = reviewDeployment(parseConfig(devConfigSource()), { SHARD_0: { put() {} } });
    expect(refusals[0]).toMatch(/^access key shardgate-dev is the development key, which everyone knows: it works only in local development/);
    expect(refusals.filter((r) => /failure domain local\/zone-\d: "local\/" domains are the local development pool/.test(r))).toHaveLength(6);
  });

  it('secrets only through wrangler secret put: inline, unset and development secrets are refused', () => {
    const inline = { ...GOOD, credentials: [{ accessKeyId: 'ops', secretAccessKey: 'hunter2' }] };
    expect(review(inline).refusals).toEqual([
      expect.stringMatching(
        /^access key ops has its secretAccessKey inline in SHARDGATE_CONFIG: .*"secretAccessKeySecret": "NAME" instead and run `wrangler secret put NAME`/,
      ),
    ]);
    const backendInline = { ...GOOD, backends: [...SIX.slice(0, 5), s3('gcs', 'gcp/eu', { secretAccessKeySecret: undefined, secretAccessKey: 'xyz' })] };
    expect(review(backendInline).refusals).toEqual([expect.stringMatching(/^backend gcs has its secretAccessKey inline/)]);
    const env = envFor(GOOD);
    delete env.OPS_SECRET;
    delete env.aws_SECRET;
    expect(review(GOOD, env).refusals).toEqual([
      'access key ops names the secret OPS_SECRET, which is not set: run `wrangler secret put OPS_SECRET`.',
      'backend aws names the secret aws_SECRET for its secret key, which is not set: run `wrangler secret put aws_SECRET`.',
    ]);
    expect(review(GOOD, { ...envFor(GOOD), OPS_SECRET: 'shardgate-dev-secret' }).refusals).toEqual([
      expect.stringContaining('the secret OPS_SECRET holds the development secret'),
    ]);
  });

  it('no access key is refused; anonymous access is allowed but warned about', () => {
    expect(review({ ...GOOD, credentials: [] }).refusals).toEqual([expect.stringMatching(/^no access key is configured/)]);
    const anon = review({ ...GOOD, credentials: [], allowAnonymous: true });
    expect(anon.refusals).toEqual([]);
    expect(anon.warnings).toEqual([expect.stringMatching(/^allowAnonymous is true: anyone can read and write every bucket/)]);
  });

  it('memory backends, missing R2 bindings; faults and plain-HTTP endpoints are warnings', () => {
    const mem = { ...GOOD, backends: [...SIX.slice(0, 5), { id: 'mem', kind: 'memory', domain: 'ram' }] };
    expect(review(mem).refusals).toEqual([expect.stringMatching(/^backend mem is a memory backend/)]);
    const env = envFor(GOOD);
    delete env.B_r2b;
    expect(review(GOOD, env).refusals).toEqual([expect.stringMatching(/^backend r2b names the R2 binding B_r2b, which this Worker does not have/)]);
    const risky = { ...GOOD, backends: [...SIX.slice(0, 5), s3('gcs', 'gcp/eu', { endpoint: 'http://10.0.0.9:9000', faults: { latencyMs: 5 } })] };
    expect(review(risky).warnings).toEqual([
      expect.stringMatching(/^backend gcs has injected faults/),
      expect.stringMatching(/^backend gcs talks to http:\/\/10\.0\.0\.9:9000 without TLS/),
    ]);
  });

  it('failure domains: all in one domain, or more than m shards forced into one, are refused naming the policy and domains', () => {
    const oneDomain = { ...GOOD, backends: SIX.map((b) => ({ ...b, domain: 'cloudflare/acct' })) };
    expect(review(oneDomain).refusals).toEqual([
      expect.stringMatching(/^policy "ec" \(4\+2\): all 6 backends are in one failure domain, cloudflare\/acct: losing it loses every object/),
    ]);
    const two = { ...GOOD, backends: SIX.map((b, i) => ({ ...b, domain: i < 3 ? 'eu' : 'us' })) };
    expect(review(two).refusals).toEqual([
      'policy "ec" (4+2) needs its 6 shards spread at most 2 per failure domain, more than these domains can hold: eu (3 backends), us (3 backends). Every write would fail, and more than m=2 shards would share a domain. Add backends in other domains or lower k+m.',
    ]);
  });

  it("failure domains of a policy with a pool are its pool's: the domains its shards get", () => {
    // 2+1 on the three S3 providers: three domains, fine; 2+1 on the two R2 buckets and AWS with R2 in one domain: refused.
    const pooled = { ...GOOD, policies: { ec: { k: 4, m: 2 }, cheap: { k: 2, m: 1, backends: ['aws', 'b2', 'wasabi'] } } };
    expect(review(pooled).refusals).toEqual([]);
    const oneAccount = {
      ...pooled,
      backends: SIX.map((b) => (b.kind === 'r2' ? { ...b, domain: 'cloudflare/acct' } : b)),
      policies: { ec: { k: 4, m: 2 }, cheap: { k: 2, m: 1, backends: ['r2a', 'r2b', 'aws'] } },
    };
    expect(review(oneAccount).refusals).toEqual([
      'policy "cheap" (2+1) needs its 3 shards spread at most 1 per failure domain, more than these domains can hold: cloudflare/acct (2 backends), aws/fra (1 backend). Every write would fail, and more than m=1 shards would share a domain. Add backends in other domains or lower k+m.',
    ]);
  });

  it('failure domains: shared domains, R2 in one account, m = 0 and small replicas are warned about', () => {
    const three = { ...GOOD, backends: SIX.map((b, i) => ({ ...b, domain: ['a', 'b', 'c'][i % 3] })) };
    expect(review(three).warnings).toEqual([
      'policy "ec" (4+2): 6 shards over 3 failure domains (a (2 backends), b (2 backends), c (2 backends)): up to 2 shards of an object share a domain, so it survives the loss of 1 domain(s), not 2.',
    ]);
    const allR2 = { ...GOOD, backends: SIX.map((b) => r2(b.id, b.domain)) };
    expect(review(allR2).warnings).toEqual([
      expect.stringMatching(
        /^policy "ec" \(4\+2\): up to 6 of its 6 shards can land on R2 bindings \(r2a, r2b, aws, b2, wasabi, gcs\), which all live in this Worker's one Cloudflare account/,
      ),
    ]);
    const noParity = {
      ...GOOD,
      policies: { plain: { k: 4, m: 0 }, ec: { k: 4, m: 2, small: { threshold: 65536, mode: 'replicate', replicas: 2 } } },
      defaultPolicy: 'ec',
    };
    expect(review(noParity).warnings).toEqual([
      'policy "plain" (4+0): m=0, no shard may be lost: any backend failure makes its objects unreadable.',
      expect.stringMatching(/^policy "ec" small objects \(2 replicas\): up to 2 of its 2 shards can land on R2 bindings \(r2a, r2b\)/),
    ]);
  });

  it('one AWS bucket through its global, legacy, regional, dualstack and virtual-hosted endpoints is one place (issue 37)', () => {
    const aws = (endpoint: string, bucket = 'shards') => ({
      ...GOOD,
      backends: [
        ...SIX.slice(0, 4),
        s3('wasabi', 'x/1', { endpoint: 'https://s3.eu-central-1.amazonaws.com', bucket: 'shards' }),
        s3('gcs', 'x/2', { endpoint, bucket }),
      ],
    });
    for (const endpoint of [
      'https://s3.amazonaws.com',
      'https://s3-external-1.amazonaws.com',
      'https://s3-eu-central-1.amazonaws.com',
      'https://s3.dualstack.eu-central-1.amazonaws.com',
      'https://shards.s3.eu-central-1.amazonaws.com',
      'https://shards.s3.amazonaws.com',
      'https://s3.us-west-2.amazonaws.com',
    ]) {
      expect(review(aws(endpoint)).refusals, endpoint).toEqual([
        expect.stringMatching(/^backends wasabi and gcs have the same AWS S3 bucket \(bucket "shards" of amazonaws\.com, however its endpoint is spelled\)/),
      ]);
    }
    expect(review(aws('https://s3.amazonaws.com', 'other-shards')).refusals).toEqual([]);
    expect(review(aws('https://s3.cn-north-1.amazonaws.com.cn')).refusals).toEqual([]); // another partition
  });

  it("an R2 bucket bound and also reached through R2's S3 endpoint is one place (issue 37)", () => {
    const viaS3 = (endpoint: string) => ({ ...GOOD, backends: [...SIX.slice(0, 5), s3('gcs', 'x/2', { endpoint, bucket: 'shards-weur' })] });
    const config = parseConfig(viaS3('https://0123456789abcdef.r2.cloudflarestorage.com'));
    const env = envFor(viaS3('https://0123456789abcdef.r2.cloudflarestorage.com'));
    expect(reviewDeployment(config, env, { B_r2a: 'shards-weur', B_r2b: 'shards-enam' }).refusals).toEqual([
      expect.stringMatching(
        /^backends r2a and gcs have the same R2 bucket \(bucket_name "shards-weur", bound as B_r2a and reached through gcs's S3 endpoint\)/,
      ),
    ]);
    const eu = viaS3('https://0123456789abcdef.eu.r2.cloudflarestorage.com');
    expect(reviewDeployment(parseConfig(eu), envFor(eu), { B_r2a: 'shards-weur', B_r2b: 'shards-enam' }).refusals).toEqual([]); // the EU jurisdiction's bucket is another
  });

  it('two S3 backends with the same endpoint and bucket are refused, naming both and the field, however the endpoint is spelled', () => {
    const twin = (extra: object) => ({ ...GOOD, backends: [...SIX.slice(0, 5), s3('gcs', 'gcp/eu', { endpoint: 'https://aws.example.net', ...extra })] });
    const refusal =
      'backends aws and gcs have the same endpoint and bucket (bucket "b" at aws.example.net:443): they store to one place, so they are one failure domain whatever their domain labels say, and losing it loses the shards of both. Give each backend a bucket of its own.';
    expect(review(twin({})).refusals).toEqual([refusal]);
    // Other spellings of the same place: host case, trailing dot and slash, the default port, the
    // addressing style, the region label, the bucket's case.
    for (const spelling of [
      { endpoint: 'https://AWS.Example.net./' },
      { endpoint: 'https://aws.example.net:443' },
      { pathStyle: false },
      { region: 'eu-central-1', bucket: 'B' },
    ])
      expect(review(twin(spelling)).refusals, JSON.stringify(spelling)).toEqual([
        expect.stringMatching(/^backends aws and gcs have the same endpoint and bucket \(bucket "b?B?" at aws\.example\.net:443\)/),
      ]);
    // Another bucket, port or base path of the same host is another place.
    expect(review(twin({ endpoint: 'https://b.aws.example.net' })).refusals).toEqual([
      expect.stringMatching(/^backends aws and gcs have the same endpoint and bucket/),
    ]); // virtual-hosted: the bucket in the host
    for (const other of [{ bucket: 'other' }, { endpoint: 'https://aws.example.net:8443' }, { endpoint: 'https://aws.example.net/tenant-2' }]) {
      expect(review(twin(other)).refusals, JSON.stringify(other)).toEqual([]);
    }
  });

  it('two R2 backends on one binding, or on two bindings of one bucket, are refused naming both', () => {
    const sameBinding = { ...GOOD, backends: [SIX[0], { ...SIX[1], binding: 'B_r2a' }, ...SIX.slice(2)] };
    expect(review(sameBinding).refusals).toEqual([expect.stringMatching(/^backends r2a and r2b have the same R2 binding \(B_r2a\): they store to one place/)]);
    const config = parseConfig(GOOD);
    const env = envFor(GOOD);
    expect(reviewDeployment(config, env, { B_r2a: 'shards-weur', B_r2b: 'shards-weur' }).refusals).toEqual([
      expect.stringMatching(/^backends r2a and r2b have the same R2 bucket \(bucket_name "shards-weur", bound as B_r2a and B_r2b\): they store to one place/),
    ]);
    expect(reviewDeployment(config, env, { B_r2a: 'shards-weur', B_r2b: 'shards-enam' }).refusals).toEqual([]);
  });

  it('an access key id given twice is refused, not silently shadowed (issue 37)', () => {
    const twice = {
      ...GOOD,
      credentials: [GOOD.credentials[0], { accessKeyId: 'ops', secretAccessKeySecret: 'OTHER_SECRET', scope: { buckets: ['*'], actions: ['read'] } }],
    };
    expect(() => parseConfig(twice)).toThrow(/access key id "ops" is given twice in "credentials"/);
  });

  it('keys without a scope and ops.open are warned about; an unset metrics token secret is refused', () => {
    const unscoped = review({
      ...GOOD,
      credentials: [{ accessKeyId: 'ops', secretAccessKeySecret: 'OPS_SECRET' }],
      ops: { open: true, metricsTokenSecret: 'METRICS_TOKEN' },
    });
    expect(unscoped.warnings).toEqual([
      expect.stringMatching(/^access key ops has no scope: it may do everything/),
      expect.stringMatching(/^ops.open is true/),
    ]);
    expect(unscoped.refusals).toEqual(['ops.metricsTokenSecret names the secret METRICS_TOKEN, which is not set: run `wrangler secret put METRICS_TOKEN`.']);
    const scoped = { ...GOOD, credentials: [{ accessKeyId: 'ops', secretAccessKeySecret: 'OPS_SECRET', scope: { buckets: ['*'], actions: ['admin'] } }] };
    expect(review(scoped)).toEqual({ refusals: [], warnings: [] });
  });

  it('a request is local only with a loopback URL host and no CF-Connecting-IP, or a loopback one', () => {
    const req = (url: string, ip?: string) => new Request(url, { headers: ip ? { 'cf-connecting-ip': ip } : {} });
    for (const url of ['http://127.0.0.1:8787/', 'http://localhost/b/k', 'http://bucket.s3.localhost:8787/k', 'http://[::1]:9000/', 'http://127.9.9.9/'])
      expect(isLoopbackRequest(req(url)), url).toBe(true);
    expect(isLoopbackRequest(req('http://127.0.0.1/', '127.0.0.1'))).toBe(true);
    expect(isLoopbackRequest(req('http://[::1]/', '::1'))).toBe(true);
    for (const url of [
      'http://gateway.example/',
      'http://127.0.0.1.nip.io/',
      'http://localhost.example/',
      'http://10.0.0.1/',
      'http://0.0.0.0/',
      'http://[::ffff:7f00:1]/',
    ])
      expect(isLoopbackRequest(req(url)), url).toBe(false);
    expect(isLoopbackRequest(req('http://127.0.0.1/', '203.0.113.7'))).toBe(false);
    expect(isLoopbackRequest(req('http://localhost/', '2001:db8::1'))).toBe(false);
  });

  it('local development is SHARDGATE_LOCAL_DEV=1 exactly; anything else is deployed', () => {
    expect(isLocalDevelopment({ SHARDGATE_LOCAL_DEV: '1' })).toBe(true);
    for (const v of [undefined, '', '0', 'true', 'yes', ' 1', 1]) expect(isLocalDevelopment({ SHARDGATE_LOCAL_DEV: v }), String(v)).toBe(false);
    expect(isLocalDevelopment({})).toBe(false);
  });
});
