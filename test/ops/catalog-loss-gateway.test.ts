/**
 * A lost catalog found by the gateway itself, in workerd (issue 37), through `npm start`'s local
 * gateway (six local R2 buckets, sealed): two buckets are written and journaled, the gateway is
 * stopped and its catalog storage deleted. A new gateway on that state starts with 0 buckets, and
 * a client recreates one bucket and writes to it before anyone looks. The next journal run (the
 * cron's, here `shardgate journal`) finds the journal on the backends ahead of the catalog: the
 * status is critical (check catalog-lost, counts only), writes to both buckets (CreateBucket of
 * the other's name included) are refused with InvalidBucketState, `shardgate rebuild --lost`
 * names them (exit 1). `shardgate rebuild --bucket` merges the recreated bucket's journal with
 * the write made since and ends its loss; `--discard` ends the other's; then writes go on and the
 * status is ok again.
 */
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalGateway, type LocalGateway } from '../../dev/local-gateway.ts';
import { shardgate, signer } from './helpers.ts';
import { oneAttemptS3Client } from '../support/s3-connections.ts';

const CREDENTIALS = { accessKeyId: 'shardgate-dev', secretAccessKey: 'shardgate-dev-secret' };

describe('a gateway whose catalog was lost says so, refuses writes to the lost buckets, and recovers', { timeout: 300_000 }, () => {
  let dir: string;
  let gateway: LocalGateway | undefined;
  let s3: S3Client;
  let cli: (args: string[]) => ReturnType<typeof shardgate>;
  const tiny = randomBytes(100),
    coded = randomBytes(20_000),
    after = randomBytes(3000);
  const client = (g: LocalGateway) => oneAttemptS3Client(g.url.toString(), CREDENTIALS);
  // Signed: an unsigned status is one document per isolate every 5 s (ANONYMOUS_STATUS_TTL_MS), so
  // a check read just before the rebuild could be read again after it on a fast machine.
  const status = async () =>
    (await (await signer(CREDENTIALS).fetch(new URL('/_shardgate/status', gateway!.url).toString())).json()) as {
      health: string;
      checks: { name: string; state: string; detail: string }[];
    };
  const lostCheck = async () => (await status()).checks.find((c) => c.name === 'catalog-lost');
  const refusal = (p: Promise<unknown>) =>
    p.then(
      () => 'accepted',
      (err: { name?: string; $metadata?: { httpStatusCode?: number } }) => `${err.$metadata?.httpStatusCode} ${err.name}`,
    );

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'shardgate-loss-'));
    const state = join(dir, 'state');
    const g = await startLocalGateway({ port: 0, hosts: ['127.0.0.1'], stateDir: state, cronSeconds: 0 });
    try {
      const c = client(g);
      for (const b of ['vault', 'photos']) await c.send(new CreateBucketCommand({ Bucket: b }));
      await c.send(new PutObjectCommand({ Bucket: 'vault', Key: 'tiny.txt', Body: tiny })); // inline: only the journal holds it
      await c.send(new PutObjectCommand({ Bucket: 'photos', Key: 'cat.jpg', Body: coded }));
      const run = await shardgate([
        'journal',
        '--endpoint',
        g.url.toString(),
        '--access-key-id',
        CREDENTIALS.accessKeyId,
        '--secret-access-key',
        CREDENTIALS.secretAccessKey,
      ]);
      expect(run.code, run.stdout + run.stderr).toBe(0);
    } finally {
      await g.close();
    }
    rmSync(join(state, 'v3', 'do'), { recursive: true, force: true }); // the catalog, every instance
    gateway = await startLocalGateway({ port: 0, hosts: ['127.0.0.1'], stateDir: state, cronSeconds: 0 });
    s3 = client(gateway);
    cli = (args) =>
      shardgate([
        ...args,
        '--endpoint',
        gateway!.url.toString(),
        '--access-key-id',
        CREDENTIALS.accessKeyId,
        '--secret-access-key',
        CREDENTIALS.secretAccessKey,
      ]);
  }, 240_000);

  afterAll(async () => {
    await gateway?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('finds the loss at the next journal run, refuses writes to the lost buckets until rebuilt or discarded', async () => {
    // Green with 0 buckets, as before: nothing has looked yet. A client recreates one and writes.
    await s3.send(new CreateBucketCommand({ Bucket: 'vault' }));
    await s3.send(new PutObjectCommand({ Bucket: 'vault', Key: 'after.bin', Body: after }));

    const journal = await cli(['journal']);
    expect(journal.stdout).toMatch(/PAUSED +3 catalog instance/);
    expect(journal.code).toBe(1);
    const check = await lostCheck();
    expect(check).toMatchObject({ state: 'critical' });
    expect(check!.detail).toMatch(/1 bucket\(s\) the catalog lacks, 1 bucket\(s\) whose catalog is behind it, the bucket list/);
    expect(check!.detail).not.toMatch(/vault|photos/);
    expect((await status()).health).toBe('critical');
    expect(await refusal(s3.send(new PutObjectCommand({ Bucket: 'vault', Key: 'x', Body: 'x' })))).toBe('409 InvalidBucketState');
    expect(await refusal(s3.send(new CreateBucketCommand({ Bucket: 'photos' })))).toBe('409 InvalidBucketState');

    const lost = await cli(['rebuild', '--lost']);
    expect(lost.code).toBe(1);
    expect(lost.stdout).toMatch(/LOST +bucket photos: .*the catalog lacks it/);
    expect(lost.stdout).toMatch(/LOST +bucket vault: .*the catalog's journal ends at segment 0/);

    const rebuilt = await cli(['rebuild', '--bucket', 'vault']);
    expect(rebuilt.stdout).toMatch(/catalog loss: ended for this bucket/);
    expect(rebuilt.code, rebuilt.stdout).toBe(0);
    const read = async (key: string) => Buffer.from(await (await s3.send(new GetObjectCommand({ Bucket: 'vault', Key: key }))).Body!.transformToByteArray());
    expect((await read('tiny.txt')).equals(tiny)).toBe(true);
    expect((await read('after.bin')).equals(after)).toBe(true);
    expect(await refusal(s3.send(new PutObjectCommand({ Bucket: 'vault', Key: 'x', Body: 'x' })))).toBe('accepted');

    const discarded = await cli(['rebuild', '--discard', 'photos']);
    expect(discarded.code, discarded.stdout).toBe(0);
    expect(discarded.stdout).toMatch(/catalog loss: none/);
    expect(await lostCheck()).toMatchObject({ state: 'ok' });
    expect(await refusal(s3.send(new CreateBucketCommand({ Bucket: 'photos' })))).toBe('accepted');
    expect((await cli(['journal'])).code).toBe(0);
    expect((await cli(['rebuild', '--lost'])).code).toBe(0);
    // The journal's own upkeep through the gateway: its segments (the adopted old ones too) checked whole.
    const upkeep = await cli(['journal', '--upkeep']);
    expect(upkeep.stdout).toMatch(/journal upkeep: [1-9]\d* segment\(s\), [1-9]\d* unit\(s\) checked .*: 0 damaged/);
    expect(upkeep.code, upkeep.stdout).toBe(0);
    const doc = (await (await signer(CREDENTIALS).fetch(new URL('/_shardgate/status', gateway!.url).toString())).json()) as {
      data: { journal: { units: number; atRisk: number; lost: number } };
    };
    expect(doc.data.journal).toMatchObject({ atRisk: 0, lost: 0 });
    expect(doc.data.journal.units).toBeGreaterThan(0);
  });
});
