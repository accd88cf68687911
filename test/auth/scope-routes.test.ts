/**
 * Scopes where the answer is more than let-through or refused (issue 21): DeleteObjects answers an
 * entry outside the scope with its own AccessDenied and deletes the rest; ListBuckets shows a key
 * only its buckets; HeadBucket's read-stats (RGW) needs list on the whole bucket; the admin API and the operator's signed reads need the admin action, in a
 * SigV4 Authorization header (presigned URLs and SigV2 refused); the config schema keeps admin
 * gateway-wide; the anonymous status is cached a few seconds.
 */
import { Hono } from 'hono';
import { AwsV4Signer } from 'aws4fetch';
import { describe, expect, it } from 'vitest';
import { DeleteObjectsCommand, ListBucketsCommand } from '@aws-sdk/client-s3';
import { makeAuthenticate } from '../../worker/app/auth-gate.ts';
import { parseConfig } from '../../worker/config/config.ts';
import { ANONYMOUS_STATUS_TTL_MS, createOperator } from '../../worker/app/operator.ts';
import type { OpsService } from '../../worker/ops/service.ts';
import type { AppEnv } from '../../worker/s3/context.ts';
import { sigv2Target } from './helpers/signers.ts';
import { BUCKET, HOST, sdk } from './mutation/bases.ts';
import { ADMIN_KEY, SCOPES, scopedGateway } from './mutation/scoped-gateway.ts';
import { toRequest } from './mutation/wire.ts';
import { gateApp } from '../support/gate-app.ts';

const [READ_ONLY, ONE_BUCKET, PREFIX] = SCOPES;
const as = (k: { accessKeyId: string; secret: string }) => ({ accessKeyId: k.accessKeyId, secret: k.secret });

async function sign(k: { accessKeyId: string; secret: string }, method: string, url: string, signQuery = false): Promise<Request> {
  const signer = new AwsV4Signer({ method, url, accessKeyId: k.accessKeyId, secretAccessKey: k.secret, service: 's3', region: 'us-east-1', signQuery });
  const signed = await signer.sign();
  return new Request(signed.url, { method: signed.method, headers: signed.headers });
}

describe('scopes beyond one operation', () => {
  it('DeleteObjects: an entry outside the prefix is AccessDenied and kept, the one inside is deleted', async () => {
    const g = await scopedGateway();
    const res = await g.send(
      toRequest(await sdk(new DeleteObjectsCommand({ Bucket: BUCKET, Delete: { Objects: [{ Key: 'dir/obj.txt' }, { Key: 'obj' }] } }), as(PREFIX!)))!,
    );
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(text).toMatch(/<Deleted><Key>dir\/obj.txt<\/Key><\/Deleted>/);
    expect(text).toMatch(/<Error><Key>obj<\/Key><Code>AccessDenied<\/Code>/);
    await expect(g.store.headObject(BUCKET, 'obj', { conditions: {} })).resolves.toBeTruthy();
    await expect(g.store.headObject(BUCKET, 'dir/obj.txt', { conditions: {} })).rejects.toMatchObject({ code: 'NoSuchKey' });
  });

  it('ListBuckets shows each key only the buckets its scope names', async () => {
    const g = await scopedGateway();
    for (const name of ['fz-new', 'other']) await g.store.createBucket(name, { region: 'us-east-1' });
    const names = async (k: (typeof SCOPES)[number]) => {
      const text = await (await g.send(toRequest(await sdk(new ListBucketsCommand({}), as(k)))!)).text();
      return [...text.matchAll(/<Name>([^<]+)<\/Name>/g)].map((m) => m[1]);
    };
    expect(await names(READ_ONLY!)).toEqual(['fz', 'fz-new', 'fz-own', 'other']);
    expect(await names(ONE_BUCKET!)).toEqual(['fz-new', 'fz-own']);
    expect(await names(PREFIX!)).toEqual(['fz']);
  });

  it("HeadBucket's read-stats (RGW) answers a key that may list the whole bucket; a prefix key gets HeadBucket but not the stats; with a bucket policy, admin keys only", async () => {
    const g = await scopedGateway();
    const head = async (k: { accessKeyId: string; secret: string }, query = '?read-stats=true') =>
      g.send(await sign(k, 'HEAD', `http://${HOST}/${BUCKET}${query}`));
    const whole = await head(READ_ONLY!);
    expect(whole.status).toBe(200);
    expect(whole.headers.get('x-rgw-object-count')).toBe('2');
    expect(whole.headers.get('x-rgw-bytes-used')).toBe(
      String('object body'.length + (await g.store.headObject(BUCKET, 'dir/obj.txt', { conditions: {} })).size),
    );
    expect((await head(PREFIX!, '')).status).toBe(200);
    const prefixStats = await head(PREFIX!);
    expect(prefixStats.status).toBe(403);
    expect(prefixStats.headers.get('x-rgw-object-count')).toBeNull();
    const everything = { accessKeyId: 'AKIDEVERYTHING', secret: 'everything secret' };
    const withAdmin = gateApp(undefined, [
      { accessKeyId: everything.accessKeyId, secretAccessKey: everything.secret },
      { accessKeyId: READ_ONLY!.accessKeyId, secretAccessKey: READ_ONLY!.secret, scope: READ_ONLY!.grant },
    ]);
    await withAdmin.store.createBucket(BUCKET, { region: 'us-east-1' });
    await withAdmin.store.config.putBucketPolicy(
      BUCKET,
      JSON.stringify({
        Version: '2012-10-17',
        Statement: [{ Effect: 'Deny', Principal: '*', Action: 's3:ListBucketVersions', Resource: `arn:aws:s3:::${BUCKET}` }],
      }),
    );
    const send = async (k: { accessKeyId: string; secret: string }) => withAdmin.send(await sign(k, 'HEAD', `http://${HOST}/${BUCKET}?read-stats=true`));
    expect((await send(READ_ONLY!)).status).toBe(403);
    expect((await send(everything)).headers.get('x-rgw-object-count')).toBe('0');
  });

  it('the admin API needs the admin action in a SigV4 header: not a data key, not a presigned URL, not SigV2', async () => {
    const g = await scopedGateway();
    const url = `http://${HOST}/_shardgate/admin/collect`;
    for (const k of SCOPES) {
      const res = await g.send(await sign(k, 'POST', url));
      expect(res.status, k.name).toBe(403);
      expect(await res.json()).toMatchObject({ code: 'AccessDenied' });
    }
    expect((await g.send(await sign(ADMIN_KEY, 'POST', url))).status).toBe(200);
    expect((await g.send(await sign(ADMIN_KEY, 'POST', url, true))).status).toBe(403);
    const v2 = sigv2Target({
      method: 'POST',
      path: '/_shardgate/admin/collect',
      expires: 4102444800,
      secret: ADMIN_KEY.secret,
      accessKeyId: ADMIN_KEY.accessKeyId,
    });
    expect((await g.send(new Request(`http://${HOST}${v2}`, { method: 'POST' }))).status).toBe(403);
  });

  it('the admin-only key reads and writes no data', async () => {
    const g = await scopedGateway();
    expect((await g.send(await sign(ADMIN_KEY, 'GET', `http://${HOST}/${BUCKET}/obj`))).status).toBe(403);
    const list = await (await g.send(await sign(ADMIN_KEY, 'GET', `http://${HOST}/`))).text();
    expect(list).not.toMatch(/<Name>/);
  });

  it('signed status and metrics need the admin action in a SigV4 header', async () => {
    const credentials = [...SCOPES, ADMIN_KEY].map((k) => ({ accessKeyId: k.accessKeyId, secretAccessKey: k.secret, scope: k.grant }));
    const authenticate = makeAuthenticate({ credentials, allowAnonymous: false, region: 'us-east-1' }, {});
    const ops = { status: async ({ signed }: { signed: boolean }) => ({ doc: { signed }, totals: {} }) } as unknown as OpsService;
    const app = new Hono<AppEnv>();
    app.route('/_shardgate', createOperator({ authenticate, ops, open: false }));
    app.onError((err) => Response.json({ message: err.message }, { status: 403 }));
    const status = `http://${HOST}/_shardgate/status`;
    expect(await (await app.fetch(new Request(status))).json()).toEqual({ signed: false });
    expect(await (await app.fetch(await sign(ADMIN_KEY, 'GET', status))).json()).toEqual({ signed: true });
    expect((await app.fetch(await sign(ADMIN_KEY, 'GET', status, true))).status).toBe(403);
    expect((await app.fetch(await sign(READ_ONLY!, 'GET', status))).status).toBe(403);
    expect((await app.fetch(await sign(READ_ONLY!, 'GET', `http://${HOST}/_shardgate/metrics`))).status).toBe(403);
    expect((await app.fetch(await sign(ADMIN_KEY, 'GET', `http://${HOST}/_shardgate/metrics`, true))).status).toBe(403);
  });
});

describe('the anonymous status', () => {
  it('is one document per few seconds, however many ask; signed reads are never cached', async () => {
    let calls = 0;
    let clock = 1_000_000;
    const ops = { status: async ({ signed }: { signed: boolean }) => ({ doc: { signed, n: ++calls }, totals: {} }) } as unknown as OpsService;
    const authenticate = makeAuthenticate(
      {
        credentials: [{ accessKeyId: ADMIN_KEY.accessKeyId, secretAccessKey: ADMIN_KEY.secret, scope: ADMIN_KEY.grant }],
        allowAnonymous: false,
        region: 'us-east-1',
      },
      {},
    );
    const app = new Hono<AppEnv>();
    app.route('/_shardgate', createOperator({ authenticate, ops, open: false, now: () => clock }));
    const get = async (r: Request) => (await app.fetch(r)).json() as Promise<{ n: number }>;
    const url = `http://${HOST}/_shardgate/status`;
    const first = await Promise.all(Array.from({ length: 20 }, () => get(new Request(url))));
    expect(new Set(first.map((d) => d.n))).toEqual(new Set([1]));
    clock += ANONYMOUS_STATUS_TTL_MS - 1;
    expect((await get(new Request(url))).n).toBe(1);
    expect((await get(await sign(ADMIN_KEY, 'GET', url))).n).toBe(2);
    expect((await get(await sign(ADMIN_KEY, 'GET', url))).n).toBe(3);
    clock += 1;
    expect((await get(new Request(url))).n).toBe(4);
    expect((await get(new Request(`${url}?hours=2`))).n).toBe(5);
  });
});

describe('the scope schema', () => {
  const base = { backends: [{ kind: 'memory', id: 'a', domain: 'd' }], policies: { one: { codec: 'replicate', replicas: 1 } }, defaultPolicy: 'one' };
  const withScope = (scope: unknown) => parseConfig({ ...base, credentials: [{ accessKeyId: 'k', secretAccessKey: 's', scope }] });
  it('takes one grant or a list; admin only for every bucket without prefixes', () => {
    expect(() => withScope({ buckets: ['logs-*'], prefixes: ['a/'], actions: ['read'] })).not.toThrow();
    expect(() =>
      withScope([
        { buckets: ['*'], actions: ['admin'] },
        { buckets: ['x'], actions: ['write'] },
      ]),
    ).not.toThrow();
    expect(() => withScope({ buckets: ['x'], actions: ['admin'] })).toThrow(/admin is gateway-wide/);
    expect(() => withScope({ buckets: ['*'], prefixes: ['a/'], actions: ['admin'] })).toThrow(/admin is gateway-wide/);
    expect(() => withScope({ buckets: ['*'], actions: ['own'] })).toThrow(/actions/);
    expect(() => withScope({ buckets: [], actions: ['read'] })).toThrow(/buckets/);
  });
});
