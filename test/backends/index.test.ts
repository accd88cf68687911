// createBackend(): one plain config object in, the right Backend out, with errors a person can
// act on when the Worker env lacks what the config names.

import { describe, expect, it } from 'vitest';
import { createBackend, FaultyBackend, MemoryBackend, R2Backend, S3Backend, type BackendConfig } from '../../backends/index.ts';
import { expectKind, pattern } from './contract.ts';

const s3Config: BackendConfig = {
  id: 's3-a',
  kind: 's3',
  domain: 'aws/eu-west-1',
  endpoint: 'https://s3.eu-west-1.amazonaws.com',
  bucket: 'shards',
  region: 'eu-west-1',
  accessKeyIdSecret: 'S3A_KEY_ID',
  secretAccessKeySecret: 'S3A_SECRET',
};

describe('createBackend', () => {
  it('builds a memory backend, the same store for the same id', async () => {
    const a = createBackend({ id: 'm-1', kind: 'memory', domain: 'local' }, {});
    expect(a).toBeInstanceOf(MemoryBackend);
    await a.put('k', pattern(2), 2);
    expect((await createBackend({ id: 'm-1', kind: 'memory', domain: 'local' }, {}).head('k')).size).toBe(2);
    await expectKind(createBackend({ id: 'm-2', kind: 'memory', domain: 'local' }, {}).head('k'), 'NotFound');
  });

  it('builds an R2 backend from the named binding, or says which binding is missing', () => {
    const bucket = { put() {}, get() {}, head() {}, delete() {}, list() {} };
    const r2 = createBackend({ id: 'r2-a', kind: 'r2', domain: 'cf', binding: 'SHARDS_A' }, { SHARDS_A: bucket });
    expect(r2).toBeInstanceOf(R2Backend);
    expect({ id: r2.id, domain: r2.domain }).toEqual({ id: 'r2-a', domain: 'cf' });
    expect(() => createBackend({ id: 'r2-a', kind: 'r2', domain: 'cf', binding: 'SHARDS_A' }, {})).toThrow(/"SHARDS_A".*r2_buckets/);
  });

  it('builds an S3 backend with keys from Worker secrets, or names the missing secret', () => {
    const s3 = createBackend(s3Config, { S3A_KEY_ID: 'AK', S3A_SECRET: 'SK' });
    expect(s3).toBeInstanceOf(S3Backend);
    expect(s3.domain).toBe('aws/eu-west-1');
    expect(() => createBackend(s3Config, { S3A_KEY_ID: 'AK' })).toThrow(/wrangler secret put S3A_SECRET/);
    const { accessKeyIdSecret: _a, ...noSecretNames } = s3Config as Extract<BackendConfig, { kind: 's3' }>;
    expect(() => createBackend(noSecretNames, { S3A_SECRET: 'SK' })).toThrow(/accessKeyId or accessKeyIdSecret/);
    expect(createBackend({ ...noSecretNames, accessKeyId: 'inline' }, { S3A_SECRET: 'SK' })).toBeInstanceOf(S3Backend);
  });

  it('wraps a backend in the faults its config asks for', async () => {
    const b = createBackend({ id: 'm-3', kind: 'memory', domain: 'local', faults: { offline: true } }, {});
    expect(b).toBeInstanceOf(FaultyBackend);
    await expectKind(b.put('k', pattern(1), 1), 'Unavailable', 'm-3');
  });

  it('rejects an unknown kind by name', () => {
    expect(() => createBackend({ id: 'x', kind: 'gcs', domain: 'd' } as unknown as BackendConfig, {})).toThrow(/unknown kind "gcs"/);
  });
});
