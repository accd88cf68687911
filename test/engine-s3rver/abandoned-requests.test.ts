/**
 * Issue 19: a client that hangs up must never cost the gateway anything. Through real HTTP
 * clients against the gateway in workerd over six s3rver processes (4+2):
 * - 200 GETs of coded objects abandoned at random points (before the headers, on them, after
 *   1 KiB, mid-body), 50 abandoned ranged GETs and 50 abandoned CopyObject / UploadPartCopy
 *   calls; afterwards the isolate's coding budget is back to idle exactly (nothing held, no
 *   waiter, nothing reclaimed: every request gave back what it took by itself), and as many
 *   concurrent unread GETs as the budget fits all get their headers.
 * - more clients that stop reading (connected, not hung up) than the budget fits: those waiting
 *   get the budget of downloads that made no progress for 10 s, instead of SlowDown.
 * - four concurrent copies of 12 MiB objects under a budget that fits one copy at a time: all
 *   finish (a copy takes its read and write shares in one step, so they cannot wait on each
 *   other), and the budget is whole afterwards.
 * Before the fix, about 3 in 10 abandoned downloads leaked their budget for ever (workerd drops
 * the promises of a request whose client is gone unless something keeps it alive), and two
 * copies holding their read shares could wait on each other until SlowDown.
 */
import {
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  PutObjectCommand,
  UploadPartCopyCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { S3rverProcess } from '../backends/s3rver-harness.ts';
import { readBytes } from '../../worker/engine/coding-budget.ts';
import { ABANDON_POINTS, abandonGet, abandonPresigned, presignedGet, settledBudget, unreadGetsAnswered } from '../support/abandon.ts';
import { bodyBytes } from './bytes.ts';
import { DEV_CREDENTIALS, disposeServers, gatewayConfig, startGateway, startServers, type Gateway } from './gateway-harness.ts';

const MiB = 1024 * 1024;
const BLOCK = 256 * 1024;
/** The working set of one healthy 4+2 read with 256 KiB blocks, as the gateway estimates it. */
const READ_SHARE = readBytes({ k: 4, m: 2, blockSize: BLOCK, layout: 'striped' } as Parameters<typeof readBytes>[0]);

let servers: S3rverProcess[] = [];

beforeAll(async () => {
  servers = await startServers(6);
}, 120_000);

afterAll(async () => {
  await disposeServers(servers);
}, 120_000);

/** `count` calls of `fn`, `parallel` at a time. */
async function inWaves(count: number, parallel: number, fn: (i: number) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < count; i += parallel) await Promise.all(Array.from({ length: Math.min(parallel, count - i) }, (_, j) => fn(i + j)));
}

describe('abandoned downloads and copies', { timeout: 600_000 }, () => {
  let gateway: Gateway;
  let endpoint: string;
  let s3: S3Client;

  beforeAll(async () => {
    gateway = await startGateway(gatewayConfig(servers, { timeoutMs: 30_000 }));
    endpoint = (await gateway.directUrl()).origin;
    s3 = gateway.client({ endpoint });
    await s3.send(new CreateBucketCommand({ Bucket: 'hangups' }));
    await s3.send(new PutObjectCommand({ Bucket: 'hangups', Key: 'big', Body: bodyBytes('big', 12 * MiB) }));
    await s3.send(new PutObjectCommand({ Bucket: 'hangups', Key: 'source', Body: bodyBytes('source', 6 * MiB) }));
    await s3.send(new PutObjectCommand({ Bucket: 'hangups', Key: 'huge', Body: bodyBytes('huge', 48 * MiB) }));
  }, 180_000);

  afterAll(async () => {
    await gateway?.dispose();
  }, 60_000);

  test('200 abandoned GETs, 50 abandoned ranged GETs, 50 abandoned copies: the budget returns to idle exactly, and unread GETs still get headers', async () => {
    const url = await presignedGet(s3, 'hangups', 'big');
    const fits = Math.floor((await settledBudget(endpoint, DEV_CREDENTIALS)).capacityBytes / READ_SHARE);
    expect(fits, 'concurrent reads the budget fits').toBeGreaterThanOrEqual(10);

    await inWaves(200, 20, (i) => abandonGet(url, ABANDON_POINTS[i % 4]!, { midBytes: (1 + (i % 11)) * MiB }));
    await inWaves(50, 10, (i) => {
      const start = (i * 997_331) % (10 * MiB);
      return abandonGet(url, ABANDON_POINTS[i % 4]!, { range: `bytes=${start}-${start + MiB + i * 4099}`, midBytes: 64 * 1024 });
    });

    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: 'hangups', Key: 'assembled' }));
    await inWaves(50, 10, async (i) => {
      const url =
        i % 2 === 0
          ? await getSignedUrl(s3, new CopyObjectCommand({ Bucket: 'hangups', Key: `copy-${i}`, CopySource: 'hangups/source' }), { expiresIn: 3600 })
          : await getSignedUrl(
              s3,
              new UploadPartCopyCommand({
                Bucket: 'hangups',
                Key: 'assembled',
                UploadId,
                PartNumber: 1 + (i % 5),
                CopySource: 'hangups/source',
                CopySourceRange: i % 3 ? 'bytes=0-5242879' : undefined,
              }),
              { expiresIn: 3600 },
            );
      await abandonPresigned(url, 'PUT', i % 5 === 0 ? 0 : 5 + ((i * 37) % 150));
    });

    const idle = await settledBudget(endpoint, DEV_CREDENTIALS);
    expect(idle, 'the coding budget after every hang-up').toMatchObject({ heldBytes: 0, holders: 0, waiters: 0, waitingBytes: 0, reclaimed: 0 });

    const answered = await unreadGetsAnswered(url, fits);
    expect(answered, `${fits} concurrent unread GETs, each answered with headers`).toBe(fits);
    expect(await settledBudget(endpoint, DEV_CREDENTIALS), 'and after those hang up too').toMatchObject({ heldBytes: 0, holders: 0, waiters: 0, reclaimed: 0 });
  });

  test('clients that stop reading but stay connected make way for those waiting: more unread GETs than the budget fits all get headers', async () => {
    // Each holds its read share while its socket buffers are full; a GET waiting for budget gets
    // it once a stalled download has made no progress for 10 s (STALLED_MS), well before SlowDown.
    const url = await presignedGet(s3, 'hangups', 'huge');
    const fits = Math.floor((await settledBudget(endpoint, DEV_CREDENTIALS)).capacityBytes / READ_SHARE);
    expect(await unreadGetsAnswered(url, fits + 4, 28_000), `${fits + 4} concurrent unread GETs, each answered with headers`).toBe(fits + 4);
    expect(await settledBudget(endpoint, DEV_CREDENTIALS), 'after they hang up').toMatchObject({ heldBytes: 0, holders: 0, waiters: 0, reclaimed: 0 });
  });
});

describe('concurrent copies under a budget that fits one', { timeout: 300_000 }, () => {
  test('all finish, and the budget is whole afterwards', async () => {
    // One 12 MiB 4+2 copy needs its read share (~2.8 MiB) and write share (~5.5 MiB): 10 MiB fits
    // one at a time. Holding read shares while waiting for write shares, two would deadlock.
    const config = { ...gatewayConfig(servers, { timeoutMs: 30_000 }), codingBudget: { bytes: 10 * MiB, maxWaitMs: 20_000, tenantShare: 1 } }; // one key: the whole budget, as before shares (issue 37)
    // A gateway of its own: the coding budget is config, and this one fits one copy at a time.
    const gateway = await startGateway(config);
    try {
      const endpoint = (await gateway.directUrl()).origin;
      const s3 = gateway.client({ endpoint });
      await s3.send(new CreateBucketCommand({ Bucket: 'copies' }));
      await s3.send(new PutObjectCommand({ Bucket: 'copies', Key: 'a', Body: bodyBytes('a', 12 * MiB) }));
      await s3.send(new PutObjectCommand({ Bucket: 'copies', Key: 'b', Body: bodyBytes('b', 12 * MiB) }));
      // Four at once: three read shares alone would leave too little for any write share.
      for (let round = 0; round < 3; round++) {
        const results = await Promise.allSettled(
          ['a', 'b', 'a', 'b'].map((src, i) => s3.send(new CopyObjectCommand({ Bucket: 'copies', Key: `copy-${round}-${i}`, CopySource: `copies/${src}` }))),
        );
        expect(
          results.map((r) => r.status),
          `round ${round}`,
        ).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'fulfilled']);
      }
      expect(await settledBudget(endpoint, DEV_CREDENTIALS, 10_000)).toMatchObject({ heldBytes: 0, holders: 0, waiters: 0, reclaimed: 0 });
    } finally {
      await gateway.dispose();
    }
  });
});
