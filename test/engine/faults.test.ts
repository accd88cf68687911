/**
 * The fault table of the engine, through the S3 API with the real AWS SDK, over the R2
 * simulation behind the fault wrapper: each single backend down, m down, m+1 down (a clean 503),
 * a slow backend (hedged), bit rot, truncation and a stale shard in storage (detected, read
 * around, repaired by the queue), orphans of uncommitted writes collected, and an index lost and
 * rebuilt from shard headers.
 */
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AwsClient } from 'aws4fetch';
import { CREDENTIALS, r2Config, removeDir, startGateway, type RunningGateway } from './harness.ts';

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
function bytes(n: number, seed: number): Uint8Array {
  const out = new Uint8Array(n);
  let x = seed;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

// Bucket "copies" uses the replicate-3 baseline policy.
const CONFIG = r2Config({
  policies: { ec: { k: 4, m: 2, blockSize: 65536 }, copies: { codec: 'replicate', replicas: 3, blockSize: 65536 } },
  buckets: { copies: 'copies' },
  scrub: { mode: 'verify', unitsPerRun: 100 },
});

describe('engine fault table (SDK over the R2 simulation)', () => {
  let gw: RunningGateway;
  const B = 'faults';
  const objects = new Map<string, Uint8Array>();

  const s3 = () => gw.s3();
  const put = (key: string, body: Uint8Array) => s3().send(new PutObjectCommand({ Bucket: B, Key: key, Body: body }));
  async function get(key: string): Promise<Uint8Array> {
    const r = await s3().send(new GetObjectCommand({ Bucket: B, Key: key }));
    return r.Body!.transformToByteArray();
  }
  const placement = async (key: string) => (await gw.control(`/__test/placement?bucket=${B}&key=${key}`)) as { placement: string[]; missing: number[] };
  const fault = (backend: string, action: string, extra = '') => gw.control(`/__test/fault?backend=${backend}&action=${action}${extra}`);
  const scrub = async (key: string) => ((await gw.control(`/__test/scrub?bucket=${B}&key=${key}`)) as { shards: { ok: boolean; error?: string }[] }).shards;
  async function waitUntilScrubbed(key: string) {
    for (let i = 0; i < 100; i++) {
      if ((await scrub(key)).every((s) => s.ok)) return;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`${key}: shards still damaged: ${JSON.stringify(await scrub(key))}`);
  }

  /**
   * Repairs `keys` now: a scrubber pass (the real cron handler, verify mode: every shard of every
   * object, a cursor that starts over past the bucket's end) queues every damaged shard, then
   * waits until the repair queue has rewritten them. Tests use it where the repair they expect
   * would otherwise hang on timing: which damaged shards a read meets (reads decode from the k
   * shards their measured backend latencies favour, and hedge data shards slower than
   * readHedgeMs), or a write's repair task delivered while its backend was still offline (it
   * then retries only after 30 s).
   */
  async function repairNow(...keys: string[]) {
    await gw.control('/__test/cron');
    for (const key of keys) await waitUntilScrubbed(key);
  }

  async function waitFor(check: () => Promise<boolean>, what: string) {
    for (let i = 0; i < 100; i++) {
      if (await check()) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`timed out: ${what}`);
  }

  beforeAll(async () => {
    gw = await startGateway(CONFIG);
    await s3().send(new CreateBucketCommand({ Bucket: B }));
    for (const [key, size] of [
      ['a', 300_000],
      ['b', 1_000_000],
      ['c', 200_000],
    ] as const) {
      const body = bytes(size, size);
      objects.set(key, body);
      await put(key, body);
    }
  });
  afterAll(async () => {
    await gw?.stop();
    if (gw) removeDir(gw.persistDir);
  });

  it('reads and writes with each single backend down; the degraded write is repaired', async () => {
    const { placement: ids } = await placement('b');
    for (const id of ids) {
      await fault(id, 'offline');
      expect(sha(await get('b')), `GET with ${id} down`).toBe(sha(objects.get('b')!));
      const body = bytes(150_000, id.length + 7);
      await put(`w-${id}`, body);
      await fault(id, 'online');
      expect(sha(await get(`w-${id}`))).toBe(sha(body));
      const p = await placement(`w-${id}`);
      if (p.placement.includes(id)) {
        expect(p.missing).toEqual([p.placement.indexOf(id)]);
        await repairNow(`w-${id}`);
        await waitFor(async () => (await placement(`w-${id}`)).missing.length === 0, 'the index learns of the repair');
      }
    }
  });

  it('with m backends down reads still work and writes are refused with a 503', async () => {
    const { placement: ids } = await placement('b');
    await fault(ids[0]!, 'offline');
    await fault(ids[5]!, 'offline');
    try {
      expect(sha(await get('b'))).toBe(sha(objects.get('b')!));
      await expect(put('refused', bytes(100_000, 3))).rejects.toMatchObject({ $metadata: { httpStatusCode: 503 } });
      await expect(get('refused')).rejects.toMatchObject({ name: 'NoSuchKey' });
    } finally {
      await fault(ids[0]!, 'online');
      await fault(ids[5]!, 'online');
    }
  });

  it('with m+1 backends down a read fails cleanly with a 503, never wrong bytes', async () => {
    const { placement: ids } = await placement('b');
    for (const i of [1, 2, 4]) await fault(ids[i]!, 'offline');
    try {
      await expect(get('b')).rejects.toMatchObject({ $metadata: { httpStatusCode: 503 } });
    } finally {
      for (const i of [1, 2, 4]) await fault(ids[i]!, 'online');
    }
    expect(sha(await get('b'))).toBe(sha(objects.get('b')!));
  });

  it('a slow data-shard backend is hedged around', async () => {
    const { placement: ids } = await placement('a');
    await fault(ids[1]!, 'slow', '&ms=30000');
    try {
      expect(sha(await get('a'))).toBe(sha(objects.get('a')!));
    } finally {
      await fault(ids[1]!, 'heal');
    }
  });

  it('bit rot, truncation and a stale shard in storage are read around and repaired', async () => {
    // b loses a data shard and a parity shard at once. Whether b's read meets the deleted parity
    // shard 4 depends on timing (it decodes with whichever of parity 4 and 5 has answered faster
    // so far), and a loaded machine can make any data shard slower than the hedge: this test
    // once failed waiting for a repair that only a read could have asked for. So the reads are
    // judged on their bytes (what a read reports is unit-tested in unit.test.ts, timing-free),
    // and the repairs are asked for by a scrubber pass, which checks every shard.
    const damage = [
      ['a', 0, 'flip'],
      ['b', 2, 'truncate'],
      ['b', 4, 'delete'],
      ['c', 3, 'stale&from=a'],
    ] as const;
    for (const [key, shard, how] of damage) {
      await gw.control(`/__test/damage?bucket=${B}&key=${key}&shard=${shard}&how=${how}`);
      expect((await scrub(key))[shard]!.ok, `${key} shard ${shard} damaged by ${how}`).toBe(false);
    }
    for (const key of ['a', 'b', 'c']) expect(sha(await get(key)), `${key} read around the damage`).toBe(sha(objects.get(key)!));
    await repairNow('a', 'b', 'c');
  });

  it('bit flips on the wire are caught by block checksums', async () => {
    const { placement: ids } = await placement('c');
    await fault(ids[0]!, 'flip');
    try {
      expect(sha(await get('c'))).toBe(sha(objects.get('c')!));
    } finally {
      await fault(ids[0]!, 'heal');
    }
  });

  it('replicate-3 stores three verified copies and reads with two of them down', async () => {
    const body = bytes(1_000_000, 42);
    await s3().send(new CreateBucketCommand({ Bucket: 'copies' }));
    await s3().send(new PutObjectCommand({ Bucket: 'copies', Key: 'r', Body: body }));
    const shards = ((await gw.control('/__test/scrub?bucket=copies&key=r')) as { shards: { ok: boolean; backend: string }[] }).shards;
    expect(shards.map((x) => x.ok)).toEqual([true, true, true]);
    for (const x of shards.slice(0, 2)) await fault(x.backend, 'offline');
    try {
      const r = await s3().send(new GetObjectCommand({ Bucket: 'copies', Key: 'r' }));
      expect(sha(await r.Body!.transformToByteArray())).toBe(sha(body));
    } finally {
      for (const x of shards.slice(0, 2)) await fault(x.backend, 'online');
    }
  });

  it('the scrubber (cron) finds damage on objects nobody reads; the repair queue fixes it', async () => {
    for (const key of ['cold-1', 'cold-2']) await put(key, bytes(250_000, key.length));
    await gw.control(`/__test/damage?bucket=${B}&key=cold-1&shard=1&how=flip`);
    await gw.control(`/__test/damage?bucket=${B}&key=cold-2&shard=5&how=delete`);
    for (const key of ['cold-1', 'cold-2'])
      expect(
        (await scrub(key)).every((x) => x.ok),
        key,
      ).toBe(false);
    await gw.control('/__test/cron');
    for (const key of ['cold-1', 'cold-2']) await waitUntilScrubbed(key);
  });

  it('shards of writes that never committed are collected once their reservation expires', async () => {
    const units = async () => ((await gw.control(`/__test/units?bucket=${B}`)) as { units: Record<string, number> }).units;
    const referenced = async () => new Set(((await gw.control(`/__test/referenced?bucket=${B}`)) as { unitIds: string[] }).unitIds);
    // A gateway dying between its last shard and the commit, and a write refused below quorum.
    const {
      unitIds: [crashed],
    } = (await gw.control(`/__test/crash-write?bucket=${B}&key=b&size=400000`)) as { unitIds: string[] };
    expect((await units())[crashed!]).toBe(6);
    expect(sha(await get('b')), 'the old version stays readable').toBe(sha(objects.get('b')!));
    const { placement: ids } = await placement('a');
    for (const i of [0, 1, 2]) await fault(ids[i]!, 'offline');
    try {
      await expect(put('refused-too', bytes(100_000, 9))).rejects.toMatchObject({ $metadata: { httpStatusCode: 503 } });
    } finally {
      for (const i of [0, 1, 2]) await fault(ids[i]!, 'online');
    }
    await gw.control('/__test/collect?aheadSeconds=3600'); // a reservation lasts a day: nothing expired yet
    expect((await units())[crashed!], 'a write in progress is never collected').toBe(6);
    await gw.control(`/__test/collect?aheadSeconds=${25 * 3600}`);
    const live = await referenced();
    const left = Object.keys(await units()).filter((id) => !live.has(id));
    expect(left, 'unreferenced units left on the backends').toEqual([]);
    for (const [key, body] of objects) expect(sha(await get(key)), key).toBe(sha(body));
  });

  it('an index lost entirely is rebuilt from shard headers', async () => {
    const persistDir = gw.persistDir;
    await gw.stop();
    rmSync(join(persistDir, 'v3', 'do'), { recursive: true, force: true });
    // Started again on the same R2 state: the catalog (the Durable Objects' state) deleted under it.
    gw = await startGateway(CONFIG, { persistDir });
    await expect(get('b')).rejects.toMatchObject({ name: 'NoSuchBucket' });
    // The operator's API, signed as any S3 request (aws4fetch here; curl --aws-sigv4 works too).
    const admin = new AwsClient({ ...CREDENTIALS, service: 's3', region: 'us-east-1' });
    const unsigned = await fetch(`${gw.url}/_shardgate/admin/rebuild?bucket=${B}`, { method: 'POST' });
    expect(unsigned.status).toBe(403);
    const wrongKey = new AwsClient({ ...CREDENTIALS, secretAccessKey: 'not-the-secret', service: 's3', region: 'us-east-1' });
    expect((await wrongKey.fetch(`${gw.url}/_shardgate/admin/rebuild?bucket=${B}`, { method: 'POST' })).status).toBe(403);
    const res = await admin.fetch(`${gw.url}/_shardgate/admin/rebuild?bucket=${B}`, { method: 'POST' });
    expect(res.status).toBe(200);
    const result = (await res.json()) as { restored: string[] };
    expect(result.restored).toEqual(expect.arrayContaining(['a', 'b', 'c']));
    for (const key of ['a', 'b', 'c']) expect(sha(await get(key)), key).toBe(sha(objects.get(key)!));
  });
});
