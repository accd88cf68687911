/**
 * The local gateway as `npm start` runs it (dev/local-gateway.ts: workerd behind the Node front,
 * the cron on a timer), driven by real clients with their DEFAULT settings:
 * - boto3 sends `Expect: 100-continue` on every PutObject and the JS SDK on every body of 2 MiB or
 *   more; workerd alone never answers it, and they wait (boto3 1 s per PUT, the JS SDK ~6 s)
 *   before sending the body anyway. Each client is watched as it is, defaults unchanged: boto3
 *   logs whether a PUT sent its body on the `100 Continue` or after giving up waiting, and the
 *   `100 Continue` answers reaching the JS SDK's sockets are counted (net.client.socket): every
 *   PUT must have had its answer.
 * - `/cdn-cgi/` paths, which wrangler would answer itself (its scheduled handler for anyone), are
 *   refused by the front however they are spelled, while workerd's own port does answer them.
 * - the front talks to the Worker's own workerd (dev/user-worker.ts), skipping wrangler's proxy.
 * - the cron runs locally: a deleted object's shards are collected without anyone asking.
 * - downloads abandoned through the front (issue 19) give back their coding budget: afterwards it
 *   is idle exactly, and as many unread GETs as it fits all get their headers.
 */
import { CreateBucketCommand, DeleteObjectCommand, GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { execFile } from 'node:child_process';
import dc from 'node:diagnostics_channel';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { devConfigSource, inlineCredential, readDevConfig } from '../../dev/dev-config.ts';
import { startLocalGateway, type LocalGateway } from '../../dev/local-gateway.ts';
import { raw } from '../s3/raw-http.ts';
import { DEV_KEY_RING } from '../support/dev-encryption.ts';
import { needs, toolPath } from '../support/prerequisites.ts';
import { HEADER_MAGIC, decodeHeader, headerLength } from '../../worker/format/shard-file.ts';
import { readBytes } from '../../worker/engine/coding-budget.ts';
import { ABANDON_POINTS, abandonGet, presignedGet, settledBudget, unreadGetsAnswered } from '../support/abandon.ts';
import { workerdCpu } from '../support/wedged.ts';

const execFileAsync = promisify(execFile);
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

/** Debian's python3 with python3-boto3 (.ci/run installs it; the test needs('boto3')). */
async function boto3(script: string, args: string[]): Promise<string> {
  try {
    return (await execFileAsync(toolPath('boto3'), ['-c', script, ...args], { timeout: 120_000 })).stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`${e.message}\n${e.stderr ?? ''}`);
  }
}

// botocore logs, per request with Expect: 100-continue, whether the 100 Continue came (and the
// body went on it) or it gave up waiting (awsrequest.py, AWSConnection._send_output).
const BOTO3_PUTS = `
import boto3, json, logging, sys
seen = {'continued': 0, 'gave_up': 0}
class Watch(logging.Handler):
    def emit(self, record):
        m = record.getMessage()
        if m.startswith('100 Continue response seen'): seen['continued'] += 1
        if m.startswith('No response seen from server'): seen['gave_up'] += 1
log = logging.getLogger('botocore.awsrequest')
log.setLevel(logging.DEBUG)
log.addHandler(Watch())
s3 = boto3.client('s3', endpoint_url=sys.argv[1], aws_access_key_id=sys.argv[2], aws_secret_access_key=sys.argv[3], region_name='us-east-1')
s3.create_bucket(Bucket='boto3-defaults')
for i in range(10):
    s3.put_object(Bucket='boto3-defaults', Key='small-%d' % i, Body=b'x' * 1024)
s3.put_object(Bucket='boto3-defaults', Key='odd key+/a%2Fb', Body=b'raw path')
body = s3.get_object(Bucket='boto3-defaults', Key='odd key+/a%2Fb')['Body'].read()
print(json.dumps(dict(seen, body=body.decode())))
`;

/** Counts the `100 Continue` answers reaching this process's client sockets (it only listens: clients keep their defaults). */
function watchContinues(): { count: () => number; stop: () => void } {
  let count = 0;
  const onSocket = (message: unknown) => {
    (message as { socket: Socket }).socket.on(
      'data',
      (chunk: Buffer) => void (count += chunk.toString('latin1').split('HTTP/1.1 100 Continue\r\n').length - 1),
    );
  };
  dc.subscribe('net.client.socket', onSocket);
  return { count: () => count, stop: () => dc.unsubscribe('net.client.socket', onSocket) };
}

describe('the local gateway (npm start)', { timeout: 180_000 }, () => {
  let gw: LocalGateway;
  let state: string;
  const credential = inlineCredential(readDevConfig())!;

  beforeAll(async () => {
    state = mkdtempSync(join(tmpdir(), 'shardgate-local-'));
    // The development config of wrangler.toml, with superseded shards collectable at once.
    const config = { ...JSON.parse(devConfigSource()), garbageGraceSeconds: 0 };
    gw = await startLocalGateway({
      port: 0,
      stateDir: state,
      cronSeconds: 1,
      bindings: { SHARDGATE_CONFIG: { type: 'plain_text', value: JSON.stringify(config) } },
    });
  }, 120_000);
  afterAll(async () => {
    await gw?.close();
    if (state) rmSync(state, { recursive: true, force: true });
  }, 60_000);

  it('boto3 with its defaults: each of 11 PUTs (Expect: 100-continue) sends its body on the 100 Continue, none waits it out', needs('boto3'), async () => {
    const before = gw.front.continued;
    const { continued, gave_up, body } = JSON.parse(await boto3(BOTO3_PUTS, [gw.url.origin, credential.accessKeyId, credential.secretAccessKey])) as {
      continued: number;
      gave_up: number;
      body: string;
    };
    expect(gw.front.continued - before, 'PUTs that asked for 100-continue').toBe(11);
    expect({ continued, gave_up }, 'PUTs that sent their body on the 100 Continue / after giving up waiting').toEqual({ continued: 11, gave_up: 0 });
    expect(body, 'a key that needs the raw path (space, +, %2F) through the front').toBe('raw path');
  });

  it('the JS SDK with its defaults: each of 5 PUTs of 2 MiB (Expect: 100-continue) gets its 100 Continue', async () => {
    const client = new S3Client({ endpoint: gw.url.origin, region: 'us-east-1', credentials: { ...credential } });
    await client.send(new CreateBucketCommand({ Bucket: 'js-defaults' }));
    const body = new Uint8Array(2 * 1024 * 1024 + 1).map((_, i) => (i * 31) & 0xff);
    const before = gw.front.continued;
    const continues = watchContinues();
    try {
      for (let i = 0; i < 5; i++) await client.send(new PutObjectCommand({ Bucket: 'js-defaults', Key: `big-${i}`, Body: body }));
    } finally {
      continues.stop();
    }
    expect(gw.front.continued - before, 'PUTs that asked for 100-continue').toBe(5);
    expect(continues.count(), '100 Continue answers that reached the SDK (it sends the body on one, not after ~6 s)').toBe(5);
    const got = await client.send(new GetObjectCommand({ Bucket: 'js-defaults', Key: 'big-4' }));
    expect(sha(await got.Body!.transformToByteArray())).toBe(sha(body));
    client.destroy();
  });

  it('refuses /cdn-cgi/ paths however spelled; workerd itself would have run the cron', async () => {
    for (const path of [
      '/cdn-cgi/handler/scheduled',
      '/CDN-CGI/handler/scheduled?cron=x',
      '/x/../cdn-cgi/handler/scheduled',
      '/%63dn-cgi/handler/scheduled',
      '/cdn-cgi/mf/scheduled',
      '/cdn-cgi',
    ]) {
      const res = await raw(gw.url, { path });
      expect({ path, status: res.status }).toEqual({ path, status: 403 });
      expect(res.text).toContain('<Code>AccessDenied</Code>');
    }
    const direct = await raw(gw.workerUrl, { path: '/cdn-cgi/handler/scheduled' });
    expect(direct.status, 'wrangler answers the path itself on its own port').toBe(200);
  });

  it("the front sends requests to the Worker's own workerd, not through wrangler's proxy worker", async () => {
    // The proxy worker's connection pool raced workerd's 5 s idle close: about one request in
    // ten arriving 5 s after the previous one got a plain-text 500 "Network connection lost".
    const upstream = await gw.upstream();
    expect(upstream.port).not.toBe(gw.workerUrl.port);
    const res = await raw(upstream, { path: '/some-bucket' });
    expect(res.status, 'the Worker answers there itself').toBe(403);
    expect(res.text).toContain('<Code>AccessDenied</Code>');
  });

  it('the cron runs locally: a deleted object’s shards are collected', async () => {
    const client = new S3Client({ endpoint: gw.url.origin, region: 'us-east-1', credentials: { ...credential } });
    await client.send(new CreateBucketCommand({ Bucket: 'cron' }));
    // The bucket's shard files: every blob whose header names a unit on the bucket's shelf (the
    // catalog journal's segments are shard files too, written by the same cron, on its own shelf).
    const shelf = `${await DEV_KEY_RING.shelf('cron')}.`;
    // (A blob deleted or half written while this reads it is not counted.)
    const blobs = () =>
      readdirSync(join(state, 'v3', 'r2'), { recursive: true, encoding: 'utf8' })
        .filter((p) => /shardgate-local-\d\/blobs\/./.test(p))
        .filter((p) => {
          try {
            const head = readFileSync(join(state, 'v3', 'r2', p)).subarray(0, 8192);
            return HEADER_MAGIC.every((b, i) => head[i] === b) && decodeHeader(head.subarray(0, headerLength(head))).unitId.startsWith(shelf);
          } catch {
            return false;
          }
        }).length;
    const before = blobs();
    await client.send(new PutObjectCommand({ Bucket: 'cron', Key: 'coded', Body: new Uint8Array(300_000).fill(1) }));
    expect(blobs() - before, 'six shard files of a 4+2 object').toBe(6);
    await client.send(new DeleteObjectCommand({ Bucket: 'cron', Key: 'coded' }));
    const runs = gw.cron!.runs;
    for (let i = 0; i < 300 && (blobs() > before || gw.cron!.runs < runs + 2); i++) await new Promise((r) => setTimeout(r, 100));
    expect(gw.cron!.lastOutcome).toBe('ok');
    expect(blobs(), 'shard files left after the collector ran').toBe(before);
    client.destroy();
  });

  it('downloads abandoned through the front give back their coding budget', async () => {
    const client = new S3Client({ endpoint: gw.url.origin, region: 'us-east-1', credentials: { ...credential }, forcePathStyle: true });
    await client.send(new CreateBucketCommand({ Bucket: 'hangups' }));
    await client.send(new PutObjectCommand({ Bucket: 'hangups', Key: 'big', Body: new Uint8Array(12 * 1024 * 1024).map((_, i) => (i * 13) & 0xff) }));
    const url = await presignedGet(client, 'hangups', 'big');
    for (let wave = 0; wave < 4; wave++) {
      // A gateway that stops answering (seen once under the whole suite's load, cause not found)
      // fails here within a minute with workerd's CPU use, not at the test's timeout.
      await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          abandonGet(url, ABANDON_POINTS[i % 4]!, { midBytes: (1 + ((wave * 20 + i) % 10)) * 1024 * 1024, unansweredAfterMs: 60_000 }),
        ),
      ).catch(async (err) => {
        throw new Error(`wave ${wave}: ${(err as Error).message}; ${await workerdCpu()}`);
      });
    }
    const idle = await settledBudget(gw.url.origin, credential);
    expect(idle, 'the coding budget after 80 hang-ups').toMatchObject({ heldBytes: 0, holders: 0, waiters: 0, reclaimed: 0 });
    // The local default policy: 4+2, 256 KiB blocks.
    const fits = Math.floor(idle.capacityBytes / readBytes({ k: 4, m: 2, blockSize: 256 * 1024, layout: 'striped' } as Parameters<typeof readBytes>[0]));
    expect(await unreadGetsAnswered(url, fits), `${fits} concurrent unread GETs answered`).toBe(fits);
  });
});
