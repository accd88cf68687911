/**
 * Issue 41: the backfill through the operator's API (worker/app/admin.ts `adopt*`, signed as the
 * CLI signs), over an s3rver source: the estimate's figures, a start and its progress, a pause that
 * holds the walk, a detach refused (409, the reason) then allowed once the pass is complete, and
 * the answers for a bucket without a source.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AwsClient } from 'aws4fetch';
import { randomBytes } from 'node:crypto';
import { BackfillService } from '../../worker/adopt/backfill-service.ts';
import { createAdmin } from '../../worker/app/admin.ts';
import { createApp } from '../../worker/app/app.ts';
import { makeAuthenticate } from '../../worker/app/auth-gate.ts';
import { parseConfig, sourcePrices } from '../../worker/config/config.ts';
import { ACCESS_KEY, SECRET } from '../auth/helpers/signers.ts';
import { testS3Settings } from '../support/memory-store.ts';
import { MemoryOpsRecord } from '../../worker/ops/book.ts';
import { readDataHealth } from '../../worker/ops/data-health.ts';
import { buildStatus } from '../../worker/ops/status.ts';
import { renderMetrics } from '../../worker/ops/prometheus.ts';
import { adoptCheck } from '../../worker/ops/checks.ts';
import { command as adoptCommand, estimateText, progressText } from '../../cli/commands/adopt.ts';
import { createServer, type Server } from 'node:http';
import { BUCKET, putSource, startAdoptionHarness, type AdoptionHarness } from './harness.ts';

let h: AdoptionHarness;
let firstEstimate: Record<string, unknown>;
/** The gateway over HTTP (for the CLI): a small node:http to fetch bridge. */
let server: Server;
let endpoint = '';
let admin: (action: string, query?: string) => Promise<{ status: number; body: Record<string, unknown> }>;
const sizes = [10, 2000, 70_000, 123_456, 1, 5000, 80_000];

beforeAll(async () => {
  h = await startAdoptionHarness();
  for (const [i, n] of sizes.entries()) await putSource(h, `k ${i}+%`, new Uint8Array(randomBytes(n)));
  const policy = parseConfig({
    backends: Array.from({ length: 6 }, (_, i) => ({ id: `m${i}`, kind: 'memory', domain: `z${i}` })),
    policies: { ec: { k: 4, m: 2, blockSize: 65536 } },
    defaultPolicy: 'ec',
  }).policies.ec!;
  const service = new BackfillService({
    catalog: h.catalog,
    inner: h.inner,
    adoption: h.adoption,
    sources: new Map([[BUCKET, h.client]]),
    prices: () => sourcePrices({ endpoint: h.server.endpoint, prices: 'backblaze-b2' }),
    policy: () => policy,
    storagePrices: () => [0.015],
    now: () => h.clock.now,
  });
  const authenticate = makeAuthenticate(
    { credentials: [{ accessKeyId: ACCESS_KEY, secretAccessKey: SECRET }], allowAnonymous: false, region: 'us-east-1' },
    {},
  );
  const app = createApp({
    store: h.adoption.store(),
    config: h.config,
    authenticate,
    settings: testS3Settings(),
    admin: createAdmin({
      authenticate,
      catalog: h.catalog,
      backends: [],
      region: 'us-east-1',
      scrub: { mode: 'heads', unitsPerRun: 10 },
      enqueueRepair: () => {},
      repair: async () => {},
      adopt: service,
    }),
  });
  server = createServer(async (req, res) => {
    const answer = await app.fetch(
      new Request(`http://${req.headers.host}${req.url}`, { method: req.method!, headers: req.headers as Record<string, string> }),
    );
    res.writeHead(answer.status, Object.fromEntries(answer.headers));
    res.end(Buffer.from(await answer.arrayBuffer()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const signer = new AwsClient({ accessKeyId: ACCESS_KEY, secretAccessKey: SECRET, service: 's3', region: 'us-east-1', retries: 0 });
  admin = async (action, query = '') => {
    const res = await app.fetch(await signer.sign(`http://gw.test/_shardgate/admin/${action}?${query}`, { method: 'POST' }));
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
}, 30_000);
afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await h?.settled();
  await h?.dispose();
});

describe('the backfill through the admin API', () => {
  it('adopt-estimate: the source totals at its prices, no GET', async () => {
    const total = sizes.reduce((a, b) => a + b, 0);
    const { status, body } = await admin('adopt-estimate', `bucket=${BUCKET}`);
    expect(status).toBe(200);
    firstEstimate = body;
    expect(body).toMatchObject({ objects: 7, bytes: total, next: null, requests: { gets: 7, taggings: 7, lists: 1 } });
    expect((body.egress as { cost: number }).cost).toBeCloseTo((total / 1024 ** 3) * 0.01 + (14 / 1000) * 0.0004, 12);
    expect(h.client.sent.get).toBe(0);
  });

  it('shardgate adopt, over HTTP: --estimate and --status print the figures', async () => {
    const run = async (...argv: string[]) => {
      const out: string[] = [];
      const write = process.stdout.write.bind(process.stdout);
      process.stdout.write = ((chunk: string) => (out.push(String(chunk)), true)) as typeof process.stdout.write;
      try {
        const code = await adoptCommand.run([...argv, '--endpoint', endpoint, '--access-key-id', ACCESS_KEY, '--secret-access-key', SECRET]);
        return { code, out: out.join('') };
      } finally {
        process.stdout.write = write;
      }
    };
    const estimate = await run(BUCKET, '--estimate');
    expect(estimate.code).toBe(0);
    expect(estimate.out).toContain(`objects        7 (0 multipart, largest ${(123_456 / 1024).toFixed(1)} KiB)`);
    expect(estimate.out).toMatch(/source egress .* at \$0\.01\/GB \(preset backblaze-b2\)/);
    const status = await run('--status', '--json');
    expect(status.code).toBe(0);
    expect(JSON.parse(status.out)).toMatchObject({ buckets: [{ bucket: BUCKET, phase: 'not started', complete: false }] });
    await expect(run()).rejects.toThrow(/name the bucket/);
  });

  it('adopt starts the walk; adopt-pause holds it; adopt-status shows the progress; detach waits for a complete pass', async () => {
    const started = await admin('adopt', `bucket=${BUCKET}&max=3`);
    expect(started.status).toBe(200);
    expect(started.body).toMatchObject({ report: { adopted: 3, stopped: true }, progress: { phase: 'walking', complete: false, pass: { adopted: 3 } } });
    const refused = await admin('adopt-detach', `bucket=${BUCKET}`);
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ code: 'DetachRefused', detached: false });
    expect(refused.body.message).toMatch(/no pass over the source has ended yet \(this one has walked 3 object/);
    expect((await admin('adopt-pause', `bucket=${BUCKET}`)).body).toMatchObject({ phase: 'paused' });
    const service = (await admin('adopt-status', `bucket=${BUCKET}`)).body as { buckets: { phase: string; bytesLeft: number }[] };
    expect(service.buckets[0]).toMatchObject({ phase: 'paused' });
    // The estimate's total is what "left" is read against: the bytes of the 4 keys not yet walked.
    const walked = sizes.slice(0, 3).reduce((a, b) => a + b, 0); // "k 0+%", "k 1+%", "k 2+%" in key order
    expect(service.buckets[0]!.bytesLeft).toBe(sizes.reduce((a, b) => a + b, 0) - walked);
    // Resumed: the rest, then detach is allowed.
    const rest = await admin('adopt', `bucket=${BUCKET}&max=100`);
    expect(rest.body).toMatchObject({ report: { adopted: 4, passesCompleted: 1 }, progress: { complete: true, phase: 'waiting', totals: { adopted: 7 } } });
    const status = (await admin('adopt-status')).body as { buckets: { bucket: string; totals: { egressBytes: number } }[] };
    expect(status.buckets.map((b) => b.bucket)).toEqual([BUCKET]);
    expect(status.buckets[0]!.totals.egressBytes).toBe(sizes.reduce((a, b) => a + b, 0));
    const detached = await admin('adopt-detach', `bucket=${BUCKET}`);
    expect(detached).toMatchObject({ status: 200, body: { detached: true, forced: false, progress: { phase: 'detached', complete: true } } });
  });

  it("the status page's bucket rows, its summary, the metrics and the CLI's text show the progress", async () => {
    const now = h.clock.now;
    const data = await readDataHealth(h.catalog, new Date(now));
    const snapshot = { ...(await new MemoryOpsRecord().snapshot(now - 3_600_000)), now };
    const prices = sourcePrices({ endpoint: h.server.endpoint, prices: 'backblaze-b2' });
    const config = {
      backends: [],
      policies: {},
      defaultPolicy: 'ec',
      coder: { kernel: 'scalar', crc32: 'js' },
      scrubMode: 'heads',
      deployment: { mode: 'local', warnings: [] },
      adoptSources: { [BUCKET]: { source: `${h.server.endpoint}/src`, prices } },
    };
    const doc = buildStatus({
      config: config as never,
      snapshot,
      data,
      signed: true,
      from: now - 3_600_000,
      build: { version: 'test', isolateStartedAt: now },
    });
    const total = sizes.reduce((a, b) => a + b, 0);
    expect(doc.data.adopt).toMatchObject({ buckets: 1, complete: 1, detached: 1, adoptedObjects: 7, adoptedBytes: total, egressBytes: total });
    expect(doc.buckets!.find((b) => b.bucket === BUCKET)!.adoptProgress).toMatchObject({ phase: 'detached', complete: true, totals: { adopted: 7 } });
    expect(doc.checks.find((c) => c.name === 'adoption')).toEqual({
      name: 'adoption',
      state: 'ok',
      detail: `1 bucket(s) with a source: 0 moved in, source still attached; 0 not yet complete; 1 detached (${BUCKET})`,
    });
    const metrics = renderMetrics(doc, snapshot.totals);
    expect(metrics).toContain('shardgate_adopt_objects 7\n');
    expect(metrics).toContain(`shardgate_adopt_egress_bytes ${total}\n`);
    expect(metrics).toContain(`shardgate_bucket_adopt_complete{bucket="${BUCKET}"} 1\n`);
    const text = progressText([(await admin('adopt-status')).body.buckets as never][0]);
    expect(text).toMatch(/detached\s+yes/);
    expect(text).toContain('last pass: 7 listed, 7 adopted, 0 adopted again'); // the first run's 3 and the second's 4
    const estimate = estimateText(BUCKET, firstEstimate as never);
    expect(estimate).toContain('objects        7 (0 multipart');
    expect(estimate).toContain('source reads   7 GET, up to 7 GetObjectTagging, 0 HEAD (multipart parts), 1 LIST');
  });

  it('the adoption check: a warning when the last pass had failures; bucket names only when signed', () => {
    const rows = [
      { bucket: 'photos', phase: 'waiting', complete: true, last: { failed: 0 } },
      { bucket: 'logs-archive', phase: 'walking', complete: false, last: { failed: 2 } },
    ];
    const signed = adoptCheck(rows, true);
    expect(signed).toMatchObject({ state: 'warning', action: expect.stringContaining('shardgate adopt --status') });
    expect(signed.detail).toBe(
      '2 bucket(s) with a source: 1 moved in, source still attached (photos); 1 not yet complete (logs-archive); 0 detached; objects failed to adopt in the last pass (logs-archive)',
    );
    const unsigned = adoptCheck(rows, false);
    expect(unsigned.state).toBe('warning');
    expect(unsigned.detail).not.toMatch(/photos|logs-archive/);
  });

  it('after detach the estimate is refused (the source is never read)', async () => {
    const lists = h.client.sent.list;
    expect(await admin('adopt-estimate', `bucket=${BUCKET}`)).toMatchObject({ status: 400, body: { code: 'InvalidRequest' } });
    expect(h.client.sent.list).toBe(lists);
  });

  it('a bucket without a source, or none named, is refused', async () => {
    expect(await admin('adopt', 'bucket=other')).toMatchObject({ status: 400, body: { code: 'InvalidArgument' } });
    expect(await admin('adopt-estimate')).toMatchObject({ status: 400, body: { code: 'InvalidArgument' } });
    expect(await admin('adopt-detach', 'bucket=Not_Valid')).toMatchObject({ status: 400, body: { code: 'InvalidArgument' } });
  });
});
