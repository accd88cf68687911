/**
 * The local switch that takes one backend down and brings it back under `npm start` (issue 37;
 * worker/app/local-backend-switch.ts, dev/backend.ts): against the local gateway, `npm run
 * backend -- down local-3` makes local-3 refuse every call (the status sees it down, writes and
 * reads go on around it), `up local-3` brings it back; an unknown id is an error that names the
 * backends. The route itself answers only requests made on this machine, and only where the
 * gateway runs in local development (a deployed one has no such route).
 */
import { GetObjectCommand, PutObjectCommand, S3Client, CreateBucketCommand } from '@aws-sdk/client-s3';
import { AwsClient } from 'aws4fetch';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryBackend } from '../../backends/memory.ts';
import { inlineCredential, readDevConfig } from '../../dev/dev-config.ts';
import { ROOT } from '../../dev/paths.ts';
import { startLocalGateway, type LocalGateway } from '../../dev/local-gateway.ts';
import { LocalBackendSwitch, localBackendRoute } from '../../worker/app/local-backend-switch.ts';
import type { S3Error } from '../../worker/model/errors.ts';
import { requestView } from '../../worker/model/request.ts';
import type { AppEnv } from '../../worker/s3/context.ts';

describe('npm run backend against the local gateway', { timeout: 180_000 }, () => {
  let gw: LocalGateway;
  let state: string;
  const credential = inlineCredential(readDevConfig())!;
  const signer = new AwsClient({ ...credential, service: 's3', region: 'us-east-1', retries: 0 });
  let s3: S3Client;

  /** `npm run backend -- ...args` as a person runs it, against this gateway's port. */
  const backend = (...args: string[]) =>
    promisify(execFile)(process.execPath, ['--import', 'tsx', 'dev/backend.ts', ...args, '--port', String(gw.port)], { cwd: ROOT, timeout: 60_000 }).then(
      ({ stdout }) => ({ code: 0, stdout, stderr: '' }),
      (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
    );
  const stateOf = async (id: string) => {
    const status = (await (await signer.fetch(new URL('/_shardgate/status', gw.url))).json()) as { backends: { id: string; state: string }[] };
    return status.backends.find((b) => b.id === id)!.state;
  };

  beforeAll(async () => {
    state = mkdtempSync(join(tmpdir(), 'shardgate-backend-switch-'));
    gw = await startLocalGateway({ port: 0, stateDir: state, cronSeconds: 0 });
    s3 = new S3Client({ endpoint: gw.url.origin, region: 'us-east-1', credentials: credential, forcePathStyle: true });
    await s3.send(new CreateBucketCommand({ Bucket: 'drill' }));
  }, 120_000);
  afterAll(async () => {
    s3?.destroy();
    await gw?.close();
    if (state) rmSync(state, { recursive: true, force: true });
  }, 60_000);

  it('down: the backend refuses every call, the status shows it down, objects are written and read around it', async () => {
    const down = await backend('down', 'local-3');
    expect(down.code, down.stderr).toBe(0);
    expect(down.stdout).toMatch(/^local-3 +DOWN$/m);
    expect(down.stdout).toMatch(/^local-2 +up$/m);
    const body = new Uint8Array(300_000).map((_, i) => i & 0xff);
    await s3.send(new PutObjectCommand({ Bucket: 'drill', Key: 'during', Body: body }));
    const got = await s3.send(new GetObjectCommand({ Bucket: 'drill', Key: 'during' }));
    expect(Buffer.from(await got.Body!.transformToByteArray()).equals(Buffer.from(body))).toBe(true);
    expect(await stateOf('local-3')).toBe('down');
  });

  it('up: it is back, and answers again (its earlier errors may still show as degraded)', async () => {
    const up = await backend('up', 'local-3');
    expect(up.code, up.stderr).toBe(0);
    expect(up.stdout).toMatch(/^local-3 +up$/m);
    await s3.send(new PutObjectCommand({ Bucket: 'drill', Key: 'after', Body: new Uint8Array(300_000).fill(7) }));
    expect(await stateOf('local-3')).toMatch(/^(up|degraded)$/);
    expect((await backend('list')).stdout).not.toContain('DOWN');
  });

  it('an unknown backend or a bad command is an error that says what is expected', async () => {
    const unknown = await backend('down', 'local-9');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('answered 400 InvalidArgument: no backend "local-9" (have: local-0, local-1, local-2, local-3, local-4, local-5)');
    const bad = await backend('sideways', 'local-1');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('usage: npm run backend -- down ID | up ID | list');
  });
});

describe('the local-backend route', () => {
  const app = (localSwitch: LocalBackendSwitch) => {
    const a = new Hono<AppEnv>();
    a.onError((err) => new Response((err as S3Error).code ?? String(err), { status: (err as S3Error).status ?? 500 }));
    a.use(async (c, next) => {
      c.set('view', requestView(c.req.raw));
      await next();
    });
    a.post('/local-backend', localBackendRoute(localSwitch));
    return a;
  };

  it('answers only a request made on this machine', async () => {
    const s = new LocalBackendSwitch([new MemoryBackend({ id: 'm1', domain: 'd' })]);
    const remote = await app(s).request('http://gw.example.com/local-backend?id=m1&state=down', { method: 'POST' });
    expect(remote.status).toBe(403);
    expect(s.states()).toEqual({ m1: 'up' });
    const proxied = await app(s).request('http://127.0.0.1/local-backend?id=m1&state=down', { method: 'POST', headers: { 'cf-connecting-ip': '203.0.113.9' } });
    expect(proxied.status).toBe(403);
    const local = await app(s).request('http://127.0.0.1/local-backend?id=m1&state=down', { method: 'POST' });
    expect(await local.json()).toEqual({ backends: { m1: 'down' } });
  });

  it('down, every call fails as an unreachable backend; up, each passes untouched; a state other than down or up is refused', async () => {
    const inner = new MemoryBackend({ id: 'm', domain: 'd' });
    await inner.put('k', new Uint8Array([1, 2, 3]), 3);
    const s = new LocalBackendSwitch([inner]);
    const m = s.backends[0]!;
    expect((await app(s).request('http://localhost/local-backend?id=m&state=sideways', { method: 'POST' })).status).toBe(400);
    s.set('m', 'down');
    for (const call of [() => m.head('k'), () => m.get('k'), () => m.put('j', new Uint8Array(1), 1), () => m.delete('k'), () => m.list('')]) {
      await expect(call()).rejects.toMatchObject({ kind: 'Unavailable', backendId: 'm' });
    }
    s.set('m', 'up');
    expect(await m.head('k')).toMatchObject({ size: 3 });
    expect(m.retain).toBeUndefined(); // a backend without retention still has none
  });
});
