// The S3 backend's Object Lock retention (backends/s3.ts retain): present only with
// `objectLock: true`; a `PUT <key>?retention` whose COMPLIANCE document carries a Content-MD5
// that matches it (S3 requires one), signed like every other request.

import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { S3Backend, type S3BackendOptions } from '../../backends/s3.ts';

const base: S3BackendOptions = {
  id: 's3-a',
  domain: 'd',
  endpoint: 'https://s3.example.test',
  bucket: 'shards',
  region: 'eu-west-3',
  accessKeyId: 'AKID',
  secretAccessKey: 'secret',
  retries: 0,
};

describe('S3Backend.retain', () => {
  it('is absent unless the backend is configured objectLock', () => {
    expect(new S3Backend(base).retain).toBeUndefined();
    expect(typeof new S3Backend({ ...base, objectLock: true }).retain).toBe('function');
  });

  it('sends PutObjectRetention, COMPLIANCE, with a matching Content-MD5', async () => {
    const seen: Request[] = [];
    const backend = new S3Backend({ ...base, objectLock: true, fetch: async (req) => (seen.push(req.clone()), new Response(null, { status: 200 })) });
    const until = new Date('2031-02-03T04:05:06.000Z');
    await backend.retain!('sg1/u/0', { retainUntil: until });
    expect(seen).toHaveLength(1);
    const req = seen[0]!;
    expect(req.method).toBe('PUT');
    expect(req.url).toBe('https://s3.example.test/shards/sg1/u/0?retention');
    const body = new Uint8Array(await req.arrayBuffer());
    expect(req.headers.get('content-md5')).toBe(createHash('md5').update(body).digest('base64'));
    expect(new TextDecoder().decode(body)).toContain('<Mode>COMPLIANCE</Mode><RetainUntilDate>2031-02-03T04:05:06.000Z</RetainUntilDate>');
    expect(req.headers.get('authorization')).toMatch(/^AWS4-HMAC-SHA256 /);
  });

  it('a refusal by the backend is an error', async () => {
    const backend = new S3Backend({ ...base, objectLock: true, fetch: async () => new Response('<Error><Code>AccessDenied</Code></Error>', { status: 403 }) });
    await expect(backend.retain!('k', { retainUntil: new Date(Date.now() + 1000) })).rejects.toThrow(/403/);
  });
});
