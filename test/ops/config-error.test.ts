/**
 * A config the gateway cannot be built from says what is wrong where the operator looks:
 * `npm start` (dev/start.ts, run as a process) stops before starting workerd with the schema's
 * message naming the field; a deployed Worker answers every request with S3's XML InternalError
 * carrying that message (what awscli and the SDKs print), JSON on the operator routes, instead of
 * the plain-text 500 workerd gives for an exception.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../../dev/local-gateway.ts';
import { r2Config, removeDir, startGateway, type RunningGateway } from '../engine/harness.ts';

const BAD = { ...r2Config(), readHedgeMs: -5 };

describe('npm start with an invalid config', () => {
  it('stops with the message naming the field, before starting anything', async () => {
    const run = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'dev/start.ts', '--port', '0', '--no-watch', '--cron-seconds', '0'], {
      cwd: ROOT, env: { ...process.env, SHARDGATE_CONFIG: JSON.stringify(BAD) }, timeout: 60_000,
    }).then(() => ({ code: 0, stderr: '' }), (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }));
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/SHARDGATE_CONFIG is invalid:\n\s+readHedgeMs: Too small/);
    expect(run.stderr).not.toMatch(/^\s+at /m); // a message, not a stack trace
  }, 90_000);
});

describe('a deployed gateway with an invalid config', { timeout: 120_000 }, () => {
  let g: RunningGateway;
  beforeAll(async () => {
    g = await startGateway(BAD);
  }, 120_000);
  afterAll(async () => {
    if (g) {
      await g.stop();
      removeDir(g.persistDir);
    }
  });

  it('answers S3 requests with XML InternalError naming the field', async () => {
    const res = await fetch(`${g.url}/some-bucket/some-key`, { method: 'PUT', body: 'x' });
    expect(res.status).toBe(500);
    expect(res.headers.get('content-type')).toBe('application/xml');
    const xml = await res.text();
    expect(xml).toMatch(/<Code>InternalError<\/Code><Message>shardgate cannot start: SHARDGATE_CONFIG is invalid:\s+readHedgeMs: Too small/);
    const err = await g.s3().send(new PutObjectCommand({ Bucket: 'b', Key: 'k', Body: 'x' })).catch((e: unknown) => e as { name: string; message: string });
    expect(err).toMatchObject({ name: 'InternalError', message: expect.stringContaining('readHedgeMs') });
  });

  it('answers the operator routes with JSON', async () => {
    const res = await fetch(`${g.url}/_shardgate/status`);
    expect(res.status).toBe(500);
    expect(await res.json()).toMatchObject({ code: 'InternalError', message: expect.stringContaining('readHedgeMs') });
  });
});
