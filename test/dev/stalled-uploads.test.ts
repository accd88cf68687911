/**
 * Refusals never wait for a body (issue 21), against the local gateway as `npm start` runs it
 * (workerd behind the Node front, whose pool to workerd has 64 connections):
 * - 64 anonymous uploads that declare a megabyte and then stall after a few bytes each get their
 *   403 AccessDenied while still stalled (before the fix: never, the Worker drained with no idle
 *   limit), and a signed GET from another client is answered while all 64 are still open
 *   (before: it queued behind them in the front's pool);
 * - malformed framings (absolute-form target, two Hosts, a %-encoded Host,
 *   `Transfer-Encoding: gzip, chunked`) get a 400 from the front, never a plain-text 500.
 * Behaviour only, no timing: each wait is bounded by the test's timeout.
 */
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { devConfigSource, inlineCredential, readDevConfig } from '../../dev/dev-config.ts';
import { startLocalGateway, type LocalGateway } from '../../dev/local-gateway.ts';
import { oneAttemptS3Client } from '../support/s3-connections.ts';

/** Sends `head` (and `body`), never more; resolves with the first response head that comes back. */
function stalled(port: number, head: string, body = ''): { socket: net.Socket; answer: Promise<string> } {
  const socket = net.connect(port, '127.0.0.1', () => socket.write(head + body));
  const answer = new Promise<string>((resolve, reject) => {
    let data = '';
    socket.on('data', (c: Buffer) => {
      data += c.toString('latin1');
      if (data.includes('\r\n\r\n')) resolve(data);
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(data));
  });
  return { socket, answer };
}

describe('the local gateway under stalled and malformed requests', { timeout: 180_000 }, () => {
  let gw: LocalGateway;
  let state: string;
  const credential = inlineCredential(readDevConfig())!;

  beforeAll(async () => {
    state = mkdtempSync(join(tmpdir(), 'shardgate-stall-'));
    gw = await startLocalGateway({
      port: 0,
      stateDir: state,
      cronSeconds: 0,
      watch: false,
      bindings: { SHARDGATE_CONFIG: { type: 'plain_text', value: devConfigSource() } },
    });
  }, 120_000);
  afterAll(async () => {
    await gw?.close();
    if (state) rmSync(state, { recursive: true, force: true });
  }, 60_000);

  it('64 stalled anonymous uploads are each refused at once, and a signed GET is answered while they stay open', async () => {
    const port = Number(gw.url.port);
    const uploads = Array.from({ length: 64 }, (_, i) =>
      stalled(
        port,
        `PUT /bucket/stalled-${i} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Length: 1048576\r\nContent-Type: application/octet-stream\r\n\r\n`,
        'only a few bytes',
      ),
    );
    try {
      const answers = await Promise.all(uploads.map((u) => u.answer));
      for (const a of answers) expect(a).toMatch(/^HTTP\/1\.1 403 /);
      // None of the 64 has sent its body; another client is answered all the same.
      const client = oneAttemptS3Client(gw.url.origin, credential);
      const err = await client.send(new GetObjectCommand({ Bucket: 'no-such-bucket', Key: 'k' })).catch((e: unknown) => e as { name: string });
      expect(err).toMatchObject({ name: 'NoSuchBucket' });
    } finally {
      for (const u of uploads) u.socket.destroy();
    }
  });

  it('malformed framings get 400 from the front', async () => {
    const port = Number(gw.url.port);
    const heads = [
      `GET http://127.0.0.1:${port}/bucket/key HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`,
      `GET /bucket/key HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nHost: evil.example\r\n\r\n`,
      `GET /bucket/key HTTP/1.1\r\nHost: 127.0.0.1%3A${port}\r\n\r\n`,
      `PUT /bucket/key HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n`,
    ];
    for (const head of heads) {
      const { socket, answer } = stalled(port, head);
      try {
        const text = await answer;
        expect(text, head).toMatch(/^HTTP\/1\.1 400 /);
        expect(text, head).toContain('<Code>InvalidRequest</Code>');
      } finally {
        socket.destroy();
      }
    }
  });
});
