/**
 * The deployment review of event notification destinations (worker/config/notifications.ts
 * reviewNotifications, from worker/config/deployment.ts): a signed https webhook and a bound Queue
 * pass; plain http, loopback and private addresses (local development only), the gateway's own
 * hosts, an inline or missing signing secret and a missing Queue binding are refused; an
 * unsigned webhook is warned about.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../worker/config/config.ts';
import { reviewDeployment } from '../../worker/config/deployment.ts';

const A_KEY = btoa(String.fromCharCode(...Array.from({ length: 32 }, (_, i) => 5 * i + 2)));
const BASE = {
  backends: Array.from({ length: 6 }, (_, i) => ({
    id: `s${i}`,
    kind: 's3',
    domain: `p${i}/eu`,
    endpoint: `https://s${i}.example.net`,
    bucket: 'b',
    accessKeyIdSecret: 'K',
    secretAccessKeySecret: 'S',
  })),
  policies: { ec: { k: 4, m: 2 } },
  defaultPolicy: 'ec',
  baseDomains: ['s3.example.com'],
  credentials: [{ accessKeyId: 'ops', secretAccessKeySecret: 'OPS_SECRET', scope: { buckets: ['*'], actions: ['read', 'list', 'write', 'delete', 'admin'] } }],
  encryption: { keys: [{ id: 'k1', secret: 'KEY_K1' }], active: 'k1' },
};
const ENV: Record<string, unknown> = {
  OPS: {},
  OPS_SECRET: 'mine',
  KEY_K1: A_KEY,
  HOOK_SECRET: 'signing',
  EVENTS: { sendBatch() {} },
  K: 'key id',
  S: 'secret',
};

const review = (destinations: object, env = ENV) => reviewDeployment(parseConfig({ ...BASE, notifications: { destinations } }), env);

describe('deployment review of notification destinations', () => {
  it('a signed https webhook and a bound Queue pass', () => {
    expect(review({ hook: { webhook: 'https://hooks.example.net/s3', secret: 'HOOK_SECRET' }, q: { queue: 'EVENTS' } })).toEqual({
      refusals: [],
      warnings: [],
    });
  });

  it('refuses http, loopback and private addresses (local only), the gateway itself, inline and missing secrets, a missing Queue', () => {
    const local = review({ hook: { webhook: 'http://127.0.0.1:9000/events', secretValue: 'x' } });
    expect(local.refusals).toEqual([
      expect.stringMatching(/without TLS/),
      expect.stringMatching(/loopback or private address/),
      expect.stringMatching(/signing secret inline/),
    ]);
    expect(local.localOnly).toBe(true);
    expect(review({ hook: { webhook: 'https://10.1.2.3/e', secret: 'HOOK_SECRET' } }).refusals).toEqual([
      expect.stringMatching(/10\.1\.2\.3, a loopback or private/),
    ]);
    expect(review({ hook: { webhook: 'https://bucket.s3.example.com/e', secret: 'HOOK_SECRET' } }).refusals).toEqual([
      expect.stringMatching(/a host of this gateway/),
    ]);
    expect(review({ hook: { webhook: 'https://hooks.example.net/e', secret: 'UNSET' } }).refusals).toEqual([
      expect.stringMatching(/the secret UNSET, which is not set/),
    ]);
    expect(review({ q: { queue: 'NOPE' } }).refusals).toEqual([expect.stringMatching(/Queue binding NOPE, which this Worker does not have/)]);
    const unsigned = review({ hook: { webhook: 'https://hooks.example.net/e' } });
    expect(unsigned).toEqual({ refusals: [], warnings: [expect.stringMatching(/no signing secret/)] });
  });
});
