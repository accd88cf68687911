/**
 * A hung backend through the real gateway in workerd (issue 37): the gateway's backends are
 * bounded by the request (backendWaitMs 300 here) and its reachability is fed by their calls, as
 * gateway.ts wires them. Two of six backends accept calls and never answer: the first PUT is
 * refused with a 503 once their deadline fires (the hung calls see their abort), the next PUTs
 * and a read below k are refused without any call reaching them, and /_shardgate/health answers
 * 503. Behaviour is asserted through the fixture's call counts, never wall time (a refusal on
 * knowledge older than a second first rechecks with one probe per backend: those are counted apart).
 */
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { r2Config, removeDir, startGateway, type RunningGateway } from './harness.ts';

describe('a hung backend behind the gateway', () => {
  let g: RunningGateway;
  const HUNG = ['r2-0', 'r2-1'];
  /** The calls that reached a backend for requests (a reachability recheck's probe, a HEAD of a key that never exists, apart). */
  const calls = async (id: string) => ((await g.control(`/__test/calls?backend=${id}`)) as { calls: number }).calls;
  const aborted = async (id: string) => ((await g.control(`/__test/calls?backend=${id}`)) as { abortedHangs: number }).abortedHangs;
  const status = (err: unknown) => (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;

  beforeAll(async () => {
    g = await startGateway(r2Config({ backendWaitMs: 300, readHedgeMs: 0 }));
    await g.s3().send(new CreateBucketCommand({ Bucket: 'hung' }));
    await g.s3().send(new PutObjectCommand({ Bucket: 'hung', Key: 'before', Body: new Uint8Array(100_000).fill(1) }));
  }, 120_000);

  afterAll(async () => {
    if (g) {
      await g.stop();
      removeDir(g.persistDir);
    }
  }, 60_000);

  it('refuses writes at once after the first one met the hung backends; reads decode around them', async () => {
    for (const id of HUNG) await g.control(`/__test/fault?backend=${id}&action=hang`);
    const s3 = g.s3({ maxAttempts: 1 });
    const put = (key: string) => s3.send(new PutObjectCommand({ Bucket: 'hung', Key: key, Body: new Uint8Array(100_000).fill(2) })).then(() => 200, status);
    expect(await put('first')).toBe(503);
    for (const id of HUNG) expect(await aborted(id), id).toBeGreaterThan(0); // the deadline ended the hung puts
    const before = await Promise.all(HUNG.map(calls));
    expect(await put('second')).toBe(503);
    expect(await put('third')).toBe(503);
    expect(await Promise.all(HUNG.map(calls))).toEqual(before); // nothing reached them
    // A read: 4 of 6 shards reachable is k: decoded around the hung ones without calling them.
    const got = await (await s3.send(new GetObjectCommand({ Bucket: 'hung', Key: 'before' }))).Body!.transformToByteArray();
    expect(got).toEqual(new Uint8Array(100_000).fill(1));
    expect(await Promise.all(HUNG.map(calls))).toEqual(before);
    const health = await fetch(`${g.url}/_shardgate/health`);
    expect(health.status).toBe(503);
    expect(await health.json()).toMatchObject({ status: 'unavailable', reachable: 4 });
  });
});
