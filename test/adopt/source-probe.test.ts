/**
 * Issue 41: the start-up probe of a bucket's source (adopt/source-probe.ts) against a real s3rver:
 * one LIST of one key says the source answers; wrong credentials, a bucket the endpoint does not
 * have and an endpoint nobody listens on are each named as such, and become the review's warnings
 * (shown by the status page); a detached source is not probed; the result is kept for `everyMs`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer } from 'node:net';
import { SourceClient } from '../../worker/adopt/source-client.ts';
import { SourceProbe, probeSource } from '../../worker/adopt/source-probe.ts';
import { S3rverProcess } from '../backends/s3rver-harness.ts';

let server: S3rverProcess;
let closedPort: number;
// s3rver checks a V4 request's access key id, not its signature: wrong credentials are a wrong key id.
const client = (o: { endpoint?: string; bucket?: string; keyId?: string } = {}) =>
  new SourceClient({
    endpoint: o.endpoint ?? server.endpoint,
    bucket: o.bucket ?? 'src',
    region: 'us-east-1',
    accessKeyId: o.keyId ?? 'S3RVER',
    secretAccessKey: 'S3RVER',
    timeoutMs: 2000,
  });

beforeAll(async () => {
  server = new S3rverProcess(['src']);
  await server.start();
  // A port that was free a moment ago: nothing listens there.
  closedPort = await new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}, 30_000);
afterAll(async () => {
  await server?.dispose();
});

describe('the source probe', () => {
  it('names each way a source fails, and nothing when it answers', async () => {
    expect(await probeSource('b', client())).toMatchObject({ ok: true });
    const wrongKey = await probeSource('b', client({ keyId: 'NOT-A-KEY' }));
    expect(wrongKey).toMatchObject({ ok: false, detail: expect.stringMatching(/^refuses the credentials/) });
    const noBucket = await probeSource('b', client({ bucket: 'nope' }));
    expect(noBucket).toMatchObject({ ok: false, detail: expect.stringMatching(/^has no such bucket/) });
    const down = await probeSource('b', client({ endpoint: `http://127.0.0.1:${closedPort}` }));
    expect(down).toMatchObject({ ok: false, detail: expect.stringMatching(/^is not reachable/) });
  }, 30_000);

  it("becomes the review's warnings, once per everyMs, never for a detached source", async () => {
    const clock = { now: 1000 };
    const good = client();
    const bad = client({ keyId: 'WRONG' });
    const detached = new Set<string>();
    const logged: Record<string, unknown>[] = [];
    const probe = new SourceProbe(
      new Map([
        ['photos', good],
        ['logs', bad],
      ]),
      { everyMs: 60_000, now: () => clock.now, detached: async (b) => detached.has(b), log: (f) => logged.push(f) },
    );
    const warnings = await probe.warnings();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/^the source of bucket "logs" \(.*\/src\) refuses the credentials/);
    expect(
      logged
        .map((l) => [l.bucket, l.ok])
        .sort()
        .reverse(),
    ).toEqual([
      ['photos', true],
      ['logs', false],
    ]);
    const lists = good.sent.list + bad.sent.list;
    await probe.warnings();
    expect(good.sent.list + bad.sent.list).toBe(lists); // kept
    clock.now += 60_000;
    detached.add('logs');
    const [goodLists, badLists] = [good.sent.list, bad.sent.list];
    expect(await probe.warnings()).toEqual([]);
    expect(good.sent.list).toBe(goodLists + 1); // probed again
    expect(bad.sent.list).toBe(badLists); // the detached source is not asked
  }, 30_000);
});
