/**
 * Backend outages with real processes: the gateway in workerd over six s3rver processes (one per
 * backend and failure domain), policy 4+2 (write quorum 5), 64 KiB blocks so objects span many
 * stripes, driven through @aws-sdk/client-s3. Processes are killed with SIGKILL in the middle of
 * a stream of PUTs and GETs, then restarted on their ports with their data.
 * What a k+m code promises, checked: one down, everything works; two down (m), reads work and writes
 * fail with a 503 and leave nothing visible; three down (m+1), reads fail with a 503, never wrong
 * bytes and never a hang; all back, everything readable and writable again.
 * The client talks to the Worker's own socket, not to worker.url: wrangler dev's proxy in front
 * of it has failure modes of its own after an early error answer to an upload (a wedged next
 * request, a plain-text 503), which would hide what the gateway does. One test checks the proxy
 * path on purpose. SHARDGATE_ENGINE_TEST_VIA=proxy sends everything through worker.url.
 */
import { CreateBucketCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { settledBudget } from '../support/abandon.ts';
import type { S3rverProcess } from '../backends/s3rver-harness.ts';
import { bodyBytes, bodySlice, bodyStream, sha256Of } from './bytes.ts';
import { GatewayClient } from '../../cli/gateway-client.ts';
import { DEV_CREDENTIALS, disposeServers, gatewayConfig, killHard, restart, shardKeys, startGateway, startServers, type Gateway } from './gateway-harness.ts';
import { parseShardKey, unitPrefix } from '../../worker/format/shard-key.ts';
import { RECHECK_AFTER_MS, REFUSED_DOWN_MS } from '../../worker/engine/reachability.ts';

const KiB = 1024;
const MiB = 1024 * KiB;
const BUCKET = 'outage';
/** Longest any single request may take before we call it a hang. */
const HANG_MS = 60_000;

let servers: S3rverProcess[] = [];
let gateway: Gateway | undefined;
let s3: S3Client;
/** Every object that must be readable, key -> seed and size. */
const stored = new Map<string, { seed: string; size: number }>();
const down: number[] = [];

const opts = () => ({ abortSignal: AbortSignal.timeout(HANG_MS) });

interface Outcome {
  ok: boolean;
  status?: number;
  code?: string;
  message?: string;
  sha256?: string;
  bytes?: number;
}

async function put(key: string, size: number, seed = `${key}#${size}`): Promise<Outcome> {
  try {
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: bodyBytes(seed, size) }), opts());
    stored.set(key, { seed, size });
    return { ok: true };
  } catch (err) {
    return failure(err);
  }
}

async function get(key: string, range?: string): Promise<Outcome> {
  try {
    const res = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key, Range: range }), opts());
    const h = createHash('sha256');
    let bytes = 0;
    for await (const chunk of res.Body as AsyncIterable<Uint8Array>) {
      h.update(chunk);
      bytes += chunk.length;
    }
    return { ok: true, status: res.$metadata.httpStatusCode, sha256: h.digest('hex'), bytes };
  } catch (err) {
    return failure(err);
  }
}

function failure(err: unknown): Outcome {
  const e = err as { name?: string; message?: string; $metadata?: { httpStatusCode?: number }; Code?: string };
  return { ok: false, status: e.$metadata?.httpStatusCode, code: e.Code ?? e.name, message: e.message };
}

/** What a GET of a stored object must give. */
function expectIntact(key: string, got: Outcome) {
  const o = stored.get(key)!;
  expect(got, `GET ${key} with ${JSON.stringify(down)} down${got.ok ? '' : `: ${got.code}: ${got.message}`}`).toMatchObject({
    ok: true,
    bytes: o.size,
    sha256: sha256Of(o.seed, o.size),
  });
}

async function expectAllIntact() {
  for (const key of stored.keys()) expectIntact(key, await get(key));
}

/** A 503-class S3 error: a status of 503 and an S3 error code from the XML body. */
function expect503(what: string, got: Outcome) {
  expect(got.ok, `${what} should fail with ${JSON.stringify(down)} down`).toBe(false);
  expect(got.code, `${what}: a client-side abort means the gateway hung (${got.message})`).not.toMatch(/AbortError|TimeoutError/);
  expect({ status: got.status, code: got.code, message: got.message }, what).toMatchObject({ status: 503 });
}

/** Status of a HEAD (404 for a missing key), or what went wrong when no status came back. */
async function headStatus(key: string, ms = HANG_MS): Promise<number | string> {
  const signal = AbortSignal.timeout(ms);
  return s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key }), { abortSignal: signal }).then(
    (r) => r.$metadata.httpStatusCode ?? 'no status',
    // The SDK names a reset connection "TimeoutError" too: only our own signal means a hang.
    (e) => e.$metadata?.httpStatusCode ?? (signal.aborted ? `no answer within ${ms} ms` : `no HTTP answer: ${e.name}: ${e.message}`),
  );
}

/**
 * The first request after a PUT refused below quorum must be answered. Through wrangler dev's
 * proxy (worker.url) it sometimes is not: it hangs until the client gives up (seen for 150 s),
 * while the same request sent straight to the user worker's socket is answered at once. That
 * is checked softly (the test goes on and reports it), with a shorter deadline.
 * A reset of the kept-alive connection (the error answer came before the whole body was read,
 * and the server then closed the connection without `Connection: close`) is what any HTTP
 * server may do; it is logged, and the request must then succeed on a new connection.
 */
const resets: string[] = [];
async function expectNextRequestAnswers(after: string) {
  let status = await headStatus('o-64k', 20_000);
  if (typeof status === 'string' && /ECONNRESET|EPIPE|socket hang up/.test(status)) {
    resets.push(`after ${after}: ${status}`);
    status = await headStatus('o-64k', 20_000);
  }
  expect.soft(status, `first request (HEAD o-64k) after the failed ${after}`).toBe(200);
}

function fileSize(path: string): number | string {
  try {
    return statSync(path).size;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code ?? String(err);
  }
}

/** Index of the server holding shard `index` of the unit whose shards are under `prefix` (unitPrefix). */
async function holderOfShard(index: number, prefix: string): Promise<number> {
  for (const [i, server] of servers.entries()) {
    if ((await shardKeys(server)).some((k) => k.startsWith(prefix) && parseShardKey(k)?.shardIndex === index)) return i;
  }
  throw new Error(`no server holds shard ${index} of ${prefix}`);
}

/** Every unit on the backends, as its key prefix (unitPrefix). */
async function allUnits(): Promise<Set<string>> {
  const units = new Set<string>();
  for (const server of servers) {
    for (const k of await shardKeys(server)) {
      const p = parseShardKey(k);
      if (p) units.add(unitPrefix(p.bucket ?? '', p.unitId)); // a shelved unit's prefix needs no bucket
    }
  }
  return units;
}

const operator = async () =>
  new GatewayClient(
    { endpoint: (await gateway!.directUrl()).origin, 'access-key-id': DEV_CREDENTIALS.accessKeyId, 'secret-access-key': DEV_CREDENTIALS.secretAccessKey },
    {},
  );

describe('gateway over six s3rver processes, 4+2', () => {
  beforeAll(async () => {
    servers = await startServers(6);
    gateway = await startGateway(gatewayConfig(servers, { blockSize: 64 * KiB, timeoutMs: 5000, maxAttempts: 1 }));
    const endpoint = process.env.SHARDGATE_ENGINE_TEST_VIA === 'proxy' ? gateway.url : await gateway.directUrl();
    s3 = gateway.client({ endpoint: endpoint.origin });
    await s3.send(new CreateBucketCommand({ Bucket: BUCKET }), opts());
    // The bucket over 5 catalog partitions (issue 39): each step's keys in a partition of their
    // own; one more split off on line while a backend is killed, and one merged back (below).
    const split = (await (await operator()).admin('partitions', { bucket: BUCKET, at: JSON.stringify(['lane-b', 'o-', 'one', 'two']) })) as {
      ranges: unknown[];
    };
    expect(split.ranges).toHaveLength(5);
  }, 180_000);

  afterAll(async () => {
    if (resets.length) console.log('kept-alive connections reset after failed PUTs:', resets);
    await gateway?.dispose().catch(() => {});
    await disposeServers(servers);
  }, 120_000);

  let victims: number[] = [];
  // The scenario is one story: once the Worker's process is gone, later steps say nothing more.
  let workerGone = '';
  beforeEach((ctx) => {
    if (workerGone) ctx.skip();
  });
  afterEach(async (ctx) => {
    if (workerGone || (await gateway!.alive())) return;
    workerGone = ctx.task.name;
    throw new Error(
      `the gateway's workerd process stopped answering during "${ctx.task.name}" (wrangler logs it under ~/.config/.wrangler/logs; seen: "Received signal #11: Segmentation fault")`,
    );
  });

  test('all up: objects of 64 KiB, 1 MiB and 5 MiB round-trip', async () => {
    expect(await put('o-64k', 64 * KiB)).toEqual({ ok: true });
    expect(await put('o-1m', MiB)).toEqual({ ok: true });
    const before = await allUnits();
    expect(await put('o-5m', 5 * MiB)).toEqual({ ok: true });
    const o5Unit = [...(await allUnits())].filter((u) => !before.has(u));
    expect(o5Unit).toHaveLength(1);
    await expectAllIntact();
    // Victims: the holders of o-5m's data shards 1 and 2, then of its parity shard 5, so that
    // reading o-5m needs a reconstruction from the first kill on.
    victims = [await holderOfShard(1, o5Unit[0]!), await holderOfShard(2, o5Unit[0]!), await holderOfShard(5, o5Unit[0]!)];
    expect(new Set(victims).size).toBe(3);
  });

  test('one killed mid-run (SIGKILL during a stream of PUTs and GETs): every GET and PUT still succeeds', async () => {
    const results: { op: string; key: string; got: Outcome }[] = [];
    let stop = false;
    let killed = false;
    let afterKill = 0;
    let wake: () => void = () => {};
    const progressed = () => new Promise<void>((r) => (wake = r));
    const stream = async (lane: string) => {
      for (let i = 0; !stop; i++) {
        const key = `${lane}-${i}`;
        const size = i % 2 ? 5 * MiB : MiB;
        results.push({ op: 'PUT', key, got: await put(key, size) });
        results.push({ op: 'GET', key, got: await get(key) });
        results.push({ op: 'GET', key: 'o-5m', got: await get('o-5m') });
        if (killed) afterKill++;
        wake();
      }
    };
    // A 5 MiB PUT held in the middle of its body while the process dies.
    let reached!: () => void;
    let resume!: () => void;
    const atGate = new Promise<void>((r) => (reached = r));
    const gate = { pauseAt: 2 * MiB, reached, resume: new Promise<void>((r) => (resume = r)) };
    const held = bodyStream('held#5m', 5 * MiB, gate);
    const heldPut = s3
      .send(new PutObjectCommand({ Bucket: BUCKET, Key: 'held-5m', Body: held.stream, ContentLength: 5 * MiB }), opts())
      .then(() => ({ ok: true }) as Outcome, failure);
    // A 5 MiB GET read in part before the kill, the rest after.
    const heldGet = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'o-5m' }), opts());
    const heldIter = (heldGet.Body as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
    const heldHash = createHash('sha256');
    let heldBytes = 0;
    while (heldBytes < MiB) {
      const r = await heldIter.next();
      if (r.done) break;
      heldHash.update(r.value);
      heldBytes += r.value.length;
    }

    const lanes = [stream('lane-a'), stream('lane-b')];
    while (results.length < 6) await progressed();
    await atGate;
    await killHard(servers[victims[0]!]!);
    killed = true;
    down.push(victims[0]!);
    resume();
    for (;;) {
      const r = await heldIter.next();
      if (r.done) break;
      heldHash.update(r.value);
      heldBytes += r.value.length;
    }
    const heldPutResult = await heldPut;
    // Split on line while the lanes write and read with a backend just killed: lane-a's keys leave the first partition.
    const online = (await (await operator()).admin('partitions', { bucket: BUCKET, split: 'lane-a-0', splitAt: 'lane' })) as { partitions: { low: string }[] };
    expect(online.partitions.map((p) => p.low)).toEqual(['', 'lane', 'lane-b', 'o-', 'one', 'two']);
    // And a merge on line, the lanes still going: lane-b's partition into lane-a's.
    const joined = (await (await operator()).admin('partitions', { bucket: BUCKET, merge: 'lane-b-0' })) as { partitions: { low: string }[] };
    expect(joined.partitions.map((p) => p.low)).toEqual(['', 'lane', 'o-', 'one', 'two']);
    while (afterKill < 4) await progressed();
    stop = true;
    await Promise.all(lanes);

    expect({ bytes: heldBytes, sha256: heldHash.digest('hex') }, 'GET of o-5m across the kill').toEqual({
      bytes: 5 * MiB,
      sha256: sha256Of(stored.get('o-5m')!.seed, 5 * MiB),
    });
    expect(heldPutResult, 'PUT of held-5m across the kill').toEqual({ ok: true });
    stored.set('held-5m', { seed: 'held#5m', size: 5 * MiB });
    const failed = results.filter((r) => !r.got.ok);
    expect(failed, 'operations of the stream that failed').toEqual([]);
    for (const r of results.filter((x) => x.op === 'GET')) expectIntact(r.key, r.got);
    expectIntact('held-5m', await get('held-5m'));
  });

  test('one down: every object reads back, a range across stripes too, and new PUTs succeed', async () => {
    await expectAllIntact();
    const o = stored.get('o-5m')!;
    // Bytes 100000..1200000: parts of stripes 0..4, including the killed holder's data shard.
    const range = await get('o-5m', 'bytes=100000-1200000');
    expect(range).toMatchObject({
      ok: true,
      status: 206,
      bytes: 1_100_001,
      sha256: createHash('sha256')
        .update(bodySlice(o.seed, 100_000, 1_100_001))
        .digest('hex'),
    });
    const tail = await get('o-5m', 'bytes=-70000');
    expect(tail).toMatchObject({
      ok: true,
      status: 206,
      bytes: 70_000,
      sha256: createHash('sha256')
        .update(bodySlice(o.seed, 5 * MiB - 70_000, 70_000))
        .digest('hex'),
    });
    for (const [key, size] of [
      ['one-down-64k', 64 * KiB],
      ['one-down-1m', MiB],
      ['one-down-5m', 5 * MiB],
    ] as const) {
      expect(await put(key, size)).toEqual({ ok: true });
      expectIntact(key, await get(key));
    }
  });

  test('two down (m): GETs still correct; PUTs fail with a 503 and leave nothing behind', async () => {
    await killHard(servers[victims[1]!]!);
    down.push(victims[1]!);
    await expectAllIntact();
    const o = stored.get('o-5m')!;
    const range = await get('o-5m', 'bytes=100000-1200000');
    expect(range).toMatchObject({
      ok: true,
      bytes: 1_100_001,
      sha256: createHash('sha256')
        .update(bodySlice(o.seed, 100_000, 1_100_001))
        .digest('hex'),
    });

    const live = servers.filter((_, i) => !down.includes(i));
    /** Runs a PUT that must fail; returns the shard keys it left on the live backends. */
    const leftBy = async (run: () => Promise<Outcome>, what: string) => {
      const before = new Set((await Promise.all(live.map((s) => shardKeys(s)))).flat());
      expect503(what, await run());
      await expectNextRequestAnswers(what);
      const after = await Promise.all(live.map((s) => shardKeys(s)));
      // With the size on disk. s3rver-child.cjs commits an upload only once its whole body has
      // arrived (as S3 does), so a key listed here is a shard PUT that completed and was not removed.
      return after.flatMap((keys, i) =>
        keys
          .filter((k) => !before.has(k))
          .map((k) => `${k} (${fileSize(join(live[i]!.directory, 'b', `${k}._S3rver_object`))} bytes on s3rver-${servers.indexOf(live[i]!)})`),
      );
    };
    const leftovers: Record<string, string[]> = {};
    // A new key: the PUT fails and the key stays absent.
    leftovers['PUT two-down-new (1 MiB)'] = await leftBy(() => put('two-down-new', MiB), 'PUT two-down-new (1 MiB)');
    expect(await headStatus('two-down-new'), 'HEAD of the key whose PUT failed').toBe(404);
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET }), opts());
    expect((listed.Contents ?? []).map((c) => c.Key)).not.toContain('two-down-new');
    // An existing key: the failed overwrite leaves the old version readable.
    leftovers['PUT over o-1m (5 MiB)'] = await leftBy(() => put('o-1m', 5 * MiB, 'overwrite#5m'), 'PUT over o-1m (5 MiB)');
    expectIntact('o-1m', await get('o-1m'));
    // A streaming (aws-chunked) upload fails the same way.
    leftovers['streaming PUT two-down-stream (5 MiB)'] = await leftBy(
      () =>
        s3
          .send(new PutObjectCommand({ Bucket: BUCKET, Key: 'two-down-stream', Body: bodyStream('s#5m', 5 * MiB).stream, ContentLength: 5 * MiB }), opts())
          .then(() => ({ ok: true }) as Outcome, failure),
      'streaming PUT two-down-stream (5 MiB)',
    );
    expect(await headStatus('two-down-stream'), 'HEAD of the key whose streaming PUT failed').toBe(404);
    // Issue 4: "below quorum the PUT fails with a 503-class S3 error and its shards are cleaned up".
    expect(leftovers, 'shards left on live backends by PUTs that failed below quorum').toEqual({
      'PUT two-down-new (1 MiB)': [],
      'PUT over o-1m (5 MiB)': [],
      'streaming PUT two-down-stream (5 MiB)': [],
    });
  });

  // wrangler dev's proxy wedges when the worker answers a refused upload before reading its
  // body; the app drains what the store left unread (the S3 layer's length limiter holds the body
  // only while a read is pending), so the next request through the proxy is answered.
  test("two down, through wrangler dev's proxy (worker.url): a refused 5 MiB PUT does not wedge the next request", async () => {
    const viaProxy = gateway!.client();
    const refused = await viaProxy
      .send(new PutObjectCommand({ Bucket: BUCKET, Key: 'proxy-refused', Body: bodyBytes('proxy#5m', 5 * MiB) }), opts())
      .then(() => ({ ok: true }) as Outcome, failure);
    expect(refused.ok, 'the PUT is refused below quorum').toBe(false);
    // The refusal itself: a 503 S3 error, or (proxy) a plain-text 503 the SDK cannot parse.
    expect(refused.status, JSON.stringify(refused)).toBe(503);
    const signal = AbortSignal.timeout(20_000);
    const next = await viaProxy.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'o-64k' }), { abortSignal: signal }).then(
      (r) => r.$metadata.httpStatusCode,
      (e) => e.$metadata?.httpStatusCode ?? (signal.aborted ? 'no answer within 20 s' : `${e.name}: ${e.message}`),
    );
    expect(next, 'HEAD o-64k through worker.url right after the refused PUT').toBe(200);
  });

  test('three down (m+1): GETs fail with a 503, never wrong bytes, never a hang', async () => {
    await killHard(servers[victims[2]!]!);
    down.push(victims[2]!);
    for (const key of stored.keys()) {
      const got = await get(key);
      expect(got.sha256 === undefined || got.sha256 === sha256Of(stored.get(key)!.seed, stored.get(key)!.size), `GET ${key} gave wrong bytes`).toBe(true);
      expect503(`GET ${key}`, got);
    }
    expect503('range GET o-5m', await get('o-5m', 'bytes=100000-1200000'));
    // The index is not on the backends: HEAD still answers.
    const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'o-5m' }), opts());
    expect(head.ContentLength).toBe(5 * MiB);
  });

  test('all restarted on their ports: everything readable, new PUTs succeed', async () => {
    for (const i of [...down]) await restart(servers[i]!);
    down.length = 0;
    // The gateway knows them down (engine/reachability.ts: refused at once for REFUSED_DOWN_MS,
    // rechecked by a probe once that knowledge is RECHECK_AFTER_MS old, a probe waited for 1 s at
    // most): past both, each request here makes one attempt and must find them back. A client
    // right after the restart may get one 503 (retried by every S3 SDK); once, on a loaded
    // machine, the recheck's probe took longer than its wait and this test saw it.
    await new Promise((r) => setTimeout(r, REFUSED_DOWN_MS + RECHECK_AFTER_MS));
    await expectAllIntact();
    const o = stored.get('o-5m')!;
    expect(await get('o-5m', 'bytes=100000-1200000')).toMatchObject({
      ok: true,
      status: 206,
      sha256: createHash('sha256')
        .update(bodySlice(o.seed, 100_000, 1_100_001))
        .digest('hex'),
    });
    for (const [key, size] of [
      ['back-64k', 64 * KiB],
      ['back-5m', 5 * MiB],
      ['two-down-new', MiB],
    ] as const) {
      expect(await put(key, size)).toEqual({ ok: true });
      expectIntact(key, await get(key));
    }
  });

  test('after kills, refusals and failed reads, the coding budget is idle: every way a request ended gave it back', async () => {
    const endpoint = (await gateway!.directUrl()).origin;
    expect(await settledBudget(endpoint, DEV_CREDENTIALS)).toMatchObject({ heldBytes: 0, holders: 0, waiters: 0, reclaimed: 0 });
  });
});
