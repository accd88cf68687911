/**
 * A bucket's source in the config (issue 41): the schema's refusals, the deployment review's rules
 * for its keys (secrets only, set) and plain HTTP, and the clients built from it with the Worker's
 * secrets.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig, sourcePrices } from '../../worker/config/config.ts';
import { reviewDeployment } from '../../worker/config/deployment.ts';
import { sourceClients } from '../../worker/adopt/index.ts';
import { devConfigSource } from '../../dev/dev-config.ts';
import { gatewayFor } from '../../worker/gateway.ts';

const base = {
  backends: [{ id: 'm', kind: 'memory', domain: 'local/m' }],
  policies: { p: { k: 1, m: 0 } },
  defaultPolicy: 'p',
};
const source = {
  endpoint: 'https://s3.eu-west-1.amazonaws.com',
  bucket: 'old-photos',
  region: 'eu-west-1',
  accessKeyIdSecret: 'SRC_KEY',
  secretAccessKeySecret: 'SRC_SECRET',
};

describe('sources in the config', () => {
  it('parses with defaults; a source without a secret key or key id is refused', () => {
    const c = parseConfig({ ...base, sources: { photos: source } });
    expect(c.sources.photos).toMatchObject({ bucket: 'old-photos', timeoutMs: 30_000, notFoundMs: 5000 });
    const { secretAccessKeySecret: _s, ...noSecret } = source;
    expect(() => parseConfig({ ...base, sources: { photos: noSecret } })).toThrow(/give secretAccessKey or secretAccessKeySecret/);
    const { accessKeyIdSecret: _k, ...noKey } = source;
    expect(() => parseConfig({ ...base, sources: { photos: noKey } })).toThrow(/give accessKeyId or accessKeyIdSecret/);
    expect(() => parseConfig({ ...base, sources: { photos: { ...source, wrong: 1 } } })).toThrow(/wrong/);
  });

  it('the deployment review: a secret inline or not set is refused, plain HTTP warned about', () => {
    const set = { SRC_KEY: 'id', SRC_SECRET: 'secret' };
    const rules = (s: object, env: Record<string, unknown>) => {
      const r = reviewDeployment(parseConfig({ ...base, sources: { photos: s } }), env);
      return [...r.refusals, ...r.warnings].filter((m) => m.includes('source of bucket'));
    };
    expect(rules(source, set)).toEqual([]);
    expect(rules({ ...source, secretAccessKeySecret: undefined, secretAccessKey: 'inline' }, set)).toEqual([expect.stringMatching(/secretAccessKey inline/)]);
    expect(rules(source, { SRC_KEY: 'id' })).toEqual([expect.stringMatching(/SRC_SECRET .*not set/)]);
    expect(rules(source, { SRC_SECRET: 'secret' })).toEqual([expect.stringMatching(/SRC_KEY .*not set/)]);
    expect(rules({ ...source, endpoint: 'http://minio.internal:9000' }, set)).toEqual([expect.stringMatching(/without TLS/)]);
  });

  it('clients take their keys from the named secrets; a missing one names the bucket and the secret', () => {
    const c = parseConfig({ ...base, sources: { photos: source } });
    const clients = sourceClients(c.sources, { SRC_KEY: 'id', SRC_SECRET: 'secret' });
    expect(clients.get('photos')?.settings).toMatchObject({ bucket: 'old-photos', accessKeyId: 'id', secretAccessKey: 'secret', region: 'eu-west-1' });
    expect(() => sourceClients(c.sources, { SRC_KEY: 'id' })).toThrow(/source of bucket "photos": no secretAccessKey .*SRC_SECRET/);
  });
});

describe('the gateway with a source', () => {
  const bucketBinding = { put() {}, get() {}, head() {}, delete() {}, list() {} };
  const envWith = (sources: object, extra: Record<string, unknown> = {}) =>
    ({
      SHARDGATE_CONFIG: JSON.stringify({ ...JSON.parse(devConfigSource()), sources }),
      SHARDGATE_LOCAL_DEV: '1',
      CATALOG: {},
      ...Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`SHARD_${i}`, bucketBinding])),
      ...extra,
    }) as never;

  it('builds with its source clients from the secrets, and refuses to build without them', () => {
    // Without the secrets first: an isolate keeps the gateway its config built.
    expect(() => gatewayFor(envWith({ photos: source }))).toThrow(/source of bucket "photos"/);
    const g = gatewayFor(envWith({ photos: source }, { SRC_KEY: 'id', SRC_SECRET: 'secret' }));
    expect(g.config.sources.photos?.bucket).toBe('old-photos');
    // Its backfill, for the cron and the admin API; the source's egress priced by its endpoint's host.
    expect(g.backfill?.buckets()).toEqual(['photos']);
    expect(g.config.sources.photos?.repassHours).toBe(24);
    expect(sourcePrices(g.config.sources.photos!)).toMatchObject({ egressPerGB: 0.09, source: expect.stringContaining('aws-s3-standard') });
    expect(sourcePrices({ ...g.config.sources.photos!, prices: 'self-hosted' })).toMatchObject({ egressPerGB: 0, source: 'preset self-hosted' });
    expect(sourcePrices({ endpoint: 'http://minio.internal:9000' })).toBeNull();
  });
});
