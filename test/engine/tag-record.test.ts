/**
 * Tags as last set survive a catalog rebuilt from the backends (issue 22): a shard header holds
 * the tags of the write, so PutObjectTagging / DeleteObjectTagging also store a tag record beside
 * the object's shards (worker/engine/tag-record.ts). Through the SDK against the gateway in
 * workerd over the six local R2 buckets: tags changed, removed, left alone; the catalog deleted
 * whole; the operator's rebuild; then GetObjectTagging. And the record's lifetime: written to the
 * unit's placement (a tag change stored on too few backends is a 503), deleted by the collector
 * with the unit's shards once the object is overwritten, including after a rebuild.
 */
import { CreateBucketCommand, DeleteObjectTaggingCommand, GetObjectTaggingCommand, PutObjectCommand, PutObjectTaggingCommand } from '@aws-sdk/client-s3';
import { AwsClient } from 'aws4fetch';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CREDENTIALS, r2Config, removeDir, startGateway, type RunningGateway } from './harness.ts';

const CONFIG = r2Config();
const B = 'tag-records';
const body = (seed: number) => new Uint8Array(100_000).fill(seed); // coded 4+2 (above the 4 KiB inline threshold)

describe('tag records: the tags as last set, beside the shards', () => {
  let gw: RunningGateway;
  const s3 = () => gw.s3();
  const tagSet = async (key: string) => (await s3().send(new GetObjectTaggingCommand({ Bucket: B, Key: key }))).TagSet?.map((t) => `${t.Key}=${t.Value}`) ?? [];
  const putTags = (key: string, tags: Record<string, string>) =>
    s3().send(new PutObjectTaggingCommand({ Bucket: B, Key: key, Tagging: { TagSet: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })) } }));
  const placement = async (key: string) => (await gw.control(`/__test/placement?bucket=${B}&key=${key}`)) as { unitId: string; placement: string[] };
  /** Blobs per unit id on all backends: shards, and tag records. */
  const blobs = async () => ((await gw.control(`/__test/units?bucket=${B}`)) as { units: Record<string, number> }).units;

  beforeAll(async () => {
    gw = await startGateway(CONFIG);
    await s3().send(new CreateBucketCommand({ Bucket: B }));
    for (const [i, key] of ['changed', 'removed', 'untouched', 'overwritten'].entries()) {
      await s3().send(new PutObjectCommand({ Bucket: B, Key: key, Body: body(i), Tagging: 'v=1' }));
    }
  }, 180_000);

  afterAll(async () => {
    const dir = gw?.persistDir;
    await gw?.stop();
    if (dir) removeDir(dir);
  }, 60_000);

  it('a tag change writes a record to every backend of the first unit; a delete writes an empty one', async () => {
    await putTags('changed', { v: '2', who: 'ops' });
    await s3().send(new DeleteObjectTaggingCommand({ Bucket: B, Key: 'removed' }));
    await putTags('overwritten', { v: '2' });
    const units = await blobs();
    for (const key of ['changed', 'removed', 'overwritten']) expect(units[(await placement(key)).unitId], `${key}: 6 shards + 6 records`).toBe(12);
    expect(units[(await placement('untouched')).unitId], 'untouched: its 6 shards only').toBe(6);
  });

  it('a tag change stored beside fewer backends than a write needs (k+1) is a 503; the retry stores it', async () => {
    const ids = (await placement('changed')).placement;
    for (const id of ids.slice(0, 2)) await gw.control(`/__test/fault?backend=${id}&action=offline`);
    try {
      await expect(putTags('changed', { v: '3' })).rejects.toMatchObject({ name: 'ServiceUnavailable', $metadata: { httpStatusCode: 503 } });
    } finally {
      for (const id of ids.slice(0, 2)) await gw.control(`/__test/fault?backend=${id}&action=online`);
    }
    await putTags('changed', { v: '2', who: 'ops' });
  });

  it("a catalog lost entirely and rebuilt from the backends has the tags as last set, not the write's", async () => {
    const overwrittenUnit = (await placement('overwritten')).unitId;
    const persistDir = gw.persistDir;
    await gw.stop();
    rmSync(join(persistDir, 'v3', 'do'), { recursive: true, force: true });
    // Started again on the same R2 state: the catalog (the Durable Objects' state) deleted under it.
    gw = await startGateway(CONFIG, { persistDir });
    const admin = new AwsClient({ ...CREDENTIALS, service: 's3', region: 'us-east-1' });
    const res = await admin.fetch(`${gw.url}/_shardgate/admin/rebuild?bucket=${B}`, { method: 'POST' });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { restored: string[] }).restored.sort()).toEqual(['changed', 'overwritten', 'removed', 'untouched']);
    expect(await tagSet('changed')).toEqual(['v=2', 'who=ops']);
    expect(await tagSet('removed')).toEqual([]);
    expect(await tagSet('untouched')).toEqual(['v=1']);
    expect(await tagSet('overwritten')).toEqual(['v=2']);
    expect((await placement('overwritten')).unitId).toBe(overwrittenUnit);
  });

  it("the collector deletes a record with its unit's shards, after a rebuild too: nothing is left", async () => {
    const old = (await placement('overwritten')).unitId;
    await s3().send(new PutObjectCommand({ Bucket: B, Key: 'overwritten', Body: body(9) }));
    expect((await blobs())[old], 'the superseded unit waits out its grace delay').toBe(12);
    await gw.control(`/__test/collect?aheadSeconds=${2 * 3600}`);
    expect((await blobs())[old], 'shards and tag records of the superseded unit').toBeUndefined();
  });
});
