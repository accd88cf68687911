/**
 * The heads scrub on the local R2 emulator (issue 37): an outside drill deleted shard files on
 * disk (under the persist directory, as `npm start` keeps them) and the heads scrub found 0
 * damage, because the emulator answers HEAD from its metadata. The real gateway in workerd over
 * the emulator, its cron run through the fixture: with the local default (`scrub.headsBy`
 * 'tail-read') the scrub finds every deleted file; with 'head' it finds none.
 */
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { AwsClient } from 'aws4fetch';
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CREDENTIALS, r2Config, removeDir, startGateway } from './harness.ts';

async function deletedFilesFound(headsBy?: 'head' | 'tail-read'): Promise<number> {
  // One gateway per setting: scrub.headsBy is part of the config it starts with.
  const g = await startGateway(r2Config({ scrub: { mode: 'heads', unitsPerRun: 100, ...(headsBy ? { headsBy } : {}) } }));
  try {
    const s3 = g.s3();
    await s3.send(new CreateBucketCommand({ Bucket: 'disk' }));
    for (const key of ['a', 'b']) await s3.send(new PutObjectCommand({ Bucket: 'disk', Key: key, Body: new Uint8Array(100_000).fill(3) }));
    // Every blob file of the first local bucket removed on disk (its metadata rows stay).
    const blobs = join(g.persistDir, 'v3', 'r2', 'shardgate-local-0', 'blobs');
    const files = readdirSync(blobs);
    expect(files.length).toBeGreaterThanOrEqual(2);
    for (const f of files) rmSync(join(blobs, f));
    await g.control('/__test/cron');
    const signer = new AwsClient({ ...CREDENTIALS, service: 's3', region: 'us-east-1', retries: 0 });
    const status = (await (await signer.fetch(`${g.url}/_shardgate/status`)).json()) as { upkeep: { scrubDamaged: number; scrubShards: number } };
    expect(status.upkeep.scrubShards).toBeGreaterThanOrEqual(12); // both units checked
    return status.upkeep.scrubDamaged;
  } finally {
    await g.stop();
    removeDir(g.persistDir);
  }
}

describe('the heads scrub over the local R2 emulator', () => {
  it('finds shard files deleted on disk with the local default; a HEAD cannot', async () => {
    expect(await deletedFilesFound()).toBe(2); // one shard of each object lived on shardgate-local-0
    expect(await deletedFilesFound('head')).toBe(0);
  }, 120_000);
});
