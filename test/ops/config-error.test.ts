/**
 * A config the gateway cannot be built from says what is wrong where the operator looks:
 * `npm start` (dev/start.ts, run as a process) stops before starting workerd with the schema's
 * message naming the field; a deployed Worker answers every request with S3's XML InternalError
 * (what awscli and the SDKs print), JSON on the operator routes, instead of the plain-text 500
 * workerd gives for an exception, and tells clients no more than a request id: the reason (which
 * can quote the config) is only in the Worker's log (issue 21).
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../../dev/paths.ts';
import { r2Config, removeDir, startGateway, type RunningGateway } from '../engine/harness.ts';

const BAD = { ...r2Config(), readHedgeMs: -5 };

describe('npm start with an invalid config', () => {
  it('stops with the message naming the field, before starting anything', async () => {
    const run = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'dev/start.ts', '--port', '0', '--no-watch', '--cron-seconds', '0'], {
      cwd: ROOT,
      env: { ...process.env, SHARDGATE_CONFIG: JSON.stringify(BAD) },
      timeout: 60_000,
    }).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
    );
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

  it('answers S3 requests with a generic XML InternalError and a request id, never the reason', async () => {
    const res = await fetch(`${g.url}/some-bucket/some-key`, { method: 'PUT', body: 'x' });
    expect(res.status).toBe(500);
    expect(res.headers.get('content-type')).toBe('application/xml');
    const id = res.headers.get('x-amz-request-id');
    expect(id).toMatch(/^[0-9A-F]{16}$/);
    const xml = await res.text();
    expect(xml).toContain(
      `<Code>InternalError</Code><Message>shardgate cannot start: its configuration is broken (the reason is in the Worker&apos;s log with request id ${id}).</Message>`,
    );
    expect(xml).not.toMatch(/readHedgeMs|SHARDGATE_CONFIG/);
    const err = await g
      .s3()
      .send(new PutObjectCommand({ Bucket: 'b', Key: 'k', Body: 'x' }))
      .catch((e: unknown) => e as { name: string; message: string });
    expect(err).toMatchObject({ name: 'InternalError' });
    expect((err as { message: string }).message).not.toContain('readHedgeMs');
  });

  it('answers the operator routes with JSON, as generic', async () => {
    const res = await fetch(`${g.url}/_shardgate/status`);
    expect(res.status).toBe(500);
    const doc = (await res.json()) as { code: string; message: string; requestId: string };
    expect(doc).toMatchObject({ code: 'InternalError', requestId: res.headers.get('x-amz-request-id') });
    expect(doc.message).not.toContain('readHedgeMs');
  });
});
