/**
 * The least-privilege key policies of docs/DEPLOY.md step 4 (docs/deploy/*.json): valid policy
 * documents granting exactly what the S3 backend adapter asks of a bucket, no more. What it asks
 * is observed, not assumed: every Backend method is called on an S3Backend against a real s3rver
 * and each HTTP request it sends is mapped to the IAM action that authorises it. A new kind of
 * request in backends/s3.ts (a multipart upload, say) fails here until the policies grant it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3Backend } from '../../backends/s3.ts';
import { S3rverProcess } from '../backends/s3rver-harness.ts';
import { ROOT } from '../support/worker.ts';
import { bucketPrefix, shardKey } from '../../worker/format/shard-key.ts';

const DIR = join(ROOT, 'docs/deploy');

/** The IAM action that authorises an S3 request (only the shapes the adapter may send). */
function actionOf(req: Request): string {
  const url = new URL(req.url);
  const isBucket = url.pathname.replace(/^\/b\/?/, '') === '';
  if (isBucket && req.method === 'GET' && url.searchParams.get('list-type') === '2') return 's3:ListBucket';
  if (!isBucket && (req.method === 'GET' || req.method === 'HEAD') && url.search === '') return 's3:GetObject';
  if (!isBucket && req.method === 'PUT' && url.search === '') return 's3:PutObject';
  if (!isBucket && req.method === 'DELETE' && url.search === '') return 's3:DeleteObject';
  return `unmapped: ${req.method} ${url.pathname}${url.search}`;
}

describe('key policies', () => {
  const server = new S3rverProcess();
  const seen = new Set<string>();
  beforeAll(() => server.start());
  afterAll(() => server.dispose());

  it('the S3 backend asks a bucket for exactly ListBucket, GetObject, PutObject, DeleteObject', async () => {
    const b = new S3Backend({
      id: 's',
      domain: 'd',
      endpoint: server.endpoint,
      bucket: 'b',
      region: 'us-east-1',
      pathStyle: true,
      accessKeyId: 'S3RVER',
      secretAccessKey: 'S3RVER',
      fetch: (req) => (seen.add(actionOf(req)), fetch(req)),
    });
    const body = new Uint8Array(100_000).map((_, i) => i);
    await b.put(shardKey('bkt', 'u1', 0), body, body.length);
    await b.put(shardKey('bkt', 'u1', 1), new ReadableStream({ start: (c) => (c.enqueue(body), c.close()) }), body.length);
    await new Response((await b.get(shardKey('bkt', 'u1', 0), { offset: 10, length: 100 })).body).arrayBuffer();
    await new Response((await b.get(shardKey('bkt', 'u1', 1))).body).arrayBuffer();
    await b.head(shardKey('bkt', 'u1', 0));
    await b.list(bucketPrefix('bkt'), undefined, { limit: 1 }).then((p) => b.list(bucketPrefix('bkt'), p.cursor));
    await b.delete(shardKey('bkt', 'u1', 0));
    await b.delete(shardKey('bkt', 'u1', 0));
    expect([...seen].sort()).toEqual(['s3:DeleteObject', 's3:GetObject', 's3:ListBucket', 's3:PutObject']);
  });

  it.each(readdirSync(DIR).filter((f) => f.endsWith('.json')))('%s grants exactly those, on its bucket and its objects', (file) => {
    const policy = JSON.parse(readFileSync(join(DIR, file), 'utf8'));
    expect(policy.Version).toBe('2012-10-17');
    const statements = policy.Statement as { Effect: string; Action: string[]; Resource: string }[];
    expect(statements.every((s) => s.Effect === 'Allow')).toBe(true);
    const bucket = statements.find((s) => s.Action.includes('s3:ListBucket'))!.Resource;
    expect(bucket).toMatch(/^arn:aws:s3:::[a-z0-9.-]+$/);
    expect(statements.map((s) => [s.Resource, [...s.Action].sort()])).toEqual([
      [bucket, ['s3:ListBucket']],
      [`${bucket}/*`, ['s3:DeleteObject', 's3:GetObject', 's3:PutObject']],
    ]);
  });
});
