/**
 * The queue-driven mover in workerd (issue 26; upkeep/move-chain.ts), as `npm start` runs it:
 * the local gateway with its real repair queue and its cron. Objects are written while every
 * backend is active; the gateway restarts over the same state with one backend draining and a
 * cron that runs once, at start. That one run only starts the chain: every shard moved after it
 * was moved by queue links, the first of which had to send the next (more shards than one link
 * moves). Afterwards the backend holds no shard the catalog records, and every object reads back.
 */
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { AwsClient } from 'aws4fetch';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { devConfigSource, inlineCredential, readDevConfig } from '../../dev/dev-config.ts';
import { startLocalGateway, type LocalGateway } from '../../dev/local-gateway.ts';
import { MOVES_PER_LINK } from '../../worker/upkeep/move-chain.ts';

const OBJECTS = 150;
const DRAINED = 'local-5';
const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');

/** The development config with every object replicated 3 times (so five backends can take a sixth's copies), `edit` applied. */
function config(edit: (c: { backends: { id: string; state?: string }[] }) => void): string {
  const c = JSON.parse(devConfigSource());
  c.policies = { 'replicate-3': c.policies['replicate-3'] };
  delete c.storageClasses; // they name the policies dropped here
  c.defaultPolicy = 'replicate-3';
  edit(c);
  return JSON.stringify(c);
}

describe('the mover as queue links in workerd', { timeout: 300_000 }, () => {
  const state = mkdtempSync(join(tmpdir(), 'shardgate-queue-mover-'));
  let gateway: LocalGateway | undefined;
  afterAll(async () => {
    await gateway?.close();
    rmSync(state, { recursive: true, force: true });
  });
  const credentials = inlineCredential(readDevConfig())!;
  const start = (source: string, cronSeconds: number) =>
    startLocalGateway({
      port: 0,
      stateDir: state,
      cronSeconds,
      watch: false,
      logLevel: 'warn',
      bindings: { SHARDGATE_CONFIG: { type: 'plain_text', value: source } },
    });

  it('one cron run starts the chain; links drain the backend to 0 and every object reads back', async () => {
    // Started in the test: it is restarted below on the same state with the backend draining.
    gateway = await start(
      config(() => {}),
      0,
    );
    let s3 = new S3Client({ endpoint: gateway.url.toString(), region: 'us-east-1', forcePathStyle: true, credentials });
    await s3.send(new CreateBucketCommand({ Bucket: 'moves' }));
    const sums = new Map<string, string>();
    for (let i = 0; i < OBJECTS; i++) {
      const body = randomBytes(64 * 1024 + i);
      sums.set(`o${i}`, md5(body));
      await s3.send(new PutObjectCommand({ Bucket: 'moves', Key: `o${i}`, Body: body }));
    }
    s3.destroy();
    await gateway.close();

    // Restarted with the backend draining; the local cron runs once at start, then not for an hour.
    gateway = await start(
      config((c) => (c.backends.find((b) => b.id === DRAINED)!.state = 'draining')),
      3600,
    );
    const admin = new AwsClient({ ...credentials, service: 's3', region: 'us-east-1', retries: 0 });
    const left = async () => {
      const res = await admin.fetch(new URL('/_shardgate/admin/drain-status', gateway!.url).toString(), { method: 'POST' });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { backends: { backend: string; left: { shards: number }; moved: { shards: number } }[] };
      return body.backends.find((b) => b.backend === DRAINED)!;
    };
    const first = await left();
    const total = first.left.shards + first.moved.shards;
    expect(total).toBeGreaterThan(MOVES_PER_LINK); // one link cannot move them all
    const deadline = Date.now() + 180_000;
    let now = first;
    while (now.left.shards > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 1000));
      now = await left();
    }
    expect(now.left.shards).toBe(0);
    expect(now.moved.shards).toBe(total);

    s3 = new S3Client({ endpoint: gateway.url.toString(), region: 'us-east-1', forcePathStyle: true, credentials });
    for (const [key, sum] of sums) {
      const got = await s3.send(new GetObjectCommand({ Bucket: 'moves', Key: key }));
      expect(md5(await got.Body!.transformToByteArray()), key).toBe(sum);
    }
    s3.destroy();
  });
});
