/**
 * Issue 41's backfill proof (docs/ADOPTION.md "Background backfill"), in one process: an s3rver
 * source process holding `--objects` objects (1 byte to 24 KiB, a few multipart objects of 5.5
 * MiB with "-N" ETags, Content-Type and user metadata, keys with spaces, unicode, "+" and "%"),
 * and the gateway's real front door, adopting store, catalog (SQL) and EcStore (4+2 over memory
 * backends) as test/adopt/harness.ts builds them. Not workerd: a "kill" here freezes an isolate
 * (its source requests and bodies never answer again, its run is abandoned mid-object) and a new
 * isolate takes over from the checkpoint in the catalog.
 * 1. The estimate (listing only) is compared with the source's totals.
 * 2. The backfill runs in batches (as the cron would) in isolate A, which is killed a third of the
 *    way; isolate B resumes and is killed at two thirds; isolate C finishes. Meanwhile clients
 *    read `--misses` not-yet-adopted keys (through the isolate driving the backfill) and make
 *    `--writes` mixed PUTs and DELETEs of source keys.
 * 3. Checked: listings through the gateway (pages of 1000 with and without delimiter "/", pages
 *    of 7 with encoding-type url over a prefix) equal the model (the source's objects, the clients'
 *    writes over them, their deletes removed); every object reads back byte-identical (SHA-256);
 *    the client's writes won and no deleted key returned; source GETs <= objects + client misses
 *    + objects in flight at the two kills; the source is then detached and everything still reads,
 *    with no source request.
 * usage: node --import tsx bench/adopt-proof.ts [--objects N (10000)] [--misses N (200)] [--writes N (1000)] [--batch N (200)]
 * Prints every figure and ends with the checks, each "ok" or "FAILED"; exit 1 when one failed.
 * Heavy at its default size (10,000 source PUTs and adoptions): run it on a quiet machine.
 */
import { createHash, randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { BackfillService } from '../worker/adopt/backfill-service.ts';
import { parseConfig, sourcePrices } from '../worker/config/config.ts';
import { BUCKET, putSource, putSourceMultipart, startAdoptionHarness, type AdoptionHarness } from '../test/adopt/harness.ts';

const { values } = parseArgs({
  options: {
    objects: { type: 'string', default: '10000' },
    misses: { type: 'string', default: '200' },
    writes: { type: 'string', default: '1000' },
    batch: { type: 'string', default: '200' },
  },
});
const OBJECTS = Number(values.objects);
const MISSES = Number(values.misses);
const WRITES = Number(values.writes);
const BATCH = Number(values.batch);
const MULTIPART = Math.max(1, Math.min(5, Math.floor(OBJECTS / 2000)));

const digest = (b: Uint8Array) => `${b.byteLength} ${createHash('sha256').update(b).digest('hex')}`;
const checks: [string, boolean, string][] = [];
const check = (name: string, ok: boolean, detail = '') => {
  checks.push([name, ok, detail]);
  console.log(`${ok ? 'ok    ' : 'FAILED'} ${name}${detail ? `: ${detail}` : ''}`);
};
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/**
 * A source fetch for an isolate killed mid-object: object GET number `killAt` + 1 gets its first
 * body chunk, then it and every later request of the isolate freeze (no answer, no byte, ever),
 * and `killed` resolves. Null: never killed.
 */
function killable(killAt: number | null) {
  let dead = false;
  let gets = 0;
  let die!: () => void;
  const killed = new Promise<void>((resolve) => (die = resolve));
  const never = new Promise<never>(() => {});
  const fetcher = async (req: Request): Promise<Response> => {
    if (dead) return never;
    const isGet = req.method === 'GET' && !new URL(req.url).searchParams.has('list-type') && !new URL(req.url).searchParams.has('tagging');
    const last = isGet && killAt !== null && ++gets > killAt;
    const res = await fetch(req);
    if (!res.body) return res;
    const reader = res.body.getReader();
    let chunks = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(c) {
        if (dead || (last && chunks > 0)) {
          dead = true;
          die();
          return never;
        }
        const { done, value } = await reader.read();
        chunks++;
        if (done) c.close();
        else c.enqueue(value);
      },
      cancel: (r) => reader.cancel(r),
    });
    return new Response(body, { status: res.status, headers: res.headers });
  };
  return { fetch: fetcher, killed };
}

async function main(): Promise<number> {
  const h: AdoptionHarness = await startAdoptionHarness();
  try {
    return await prove(h);
  } finally {
    await h.dispose();
  }
}

async function prove(h: AdoptionHarness): Promise<number> {
  const policy = parseConfig({
    backends: Array.from({ length: 6 }, (_, i) => ({ id: `m${i}`, kind: 'memory', domain: `z${i}` })),
    policies: { ec: { k: 4, m: 2, blockSize: 65536 } },
    defaultPolicy: 'ec',
  }).policies.ec!;
  const prices = sourcePrices({ endpoint: 'https://s3.us-east-1.amazonaws.com', prices: 'aws-s3-standard' });

  // ---- The source ----
  const t0 = Date.now();
  const model = new Map<string, string>(); // key -> digest of what a client must read
  const names = ['plain', 'with space', 'ünïcödé', 'a+b', '100%', 'dir/sub'];
  const keys: string[] = [];
  for (let i = 0; i < OBJECTS - MULTIPART; i += 16) {
    await Promise.all(
      Array.from({ length: Math.min(16, OBJECTS - MULTIPART - i) }, async (_, j) => {
        const n = i + j;
        const key = `p${n % 7}/${names[n % names.length]} ${n}.bin`;
        const body = new Uint8Array(randomBytes(1 + ((n * 7919) % 24_576)));
        await putSource(h, key, body, { 'content-type': 'application/x-proof', 'x-amz-meta-n': String(n) });
        model.set(key, digest(body));
        keys.push(key);
      }),
    );
  }
  for (let i = 0; i < MULTIPART; i++) {
    const key = `multi/part ${i}.zip`;
    const body = new Uint8Array(randomBytes(5 * 1024 * 1024 + 512 * 1024));
    await putSourceMultipart(h, key, body, 5 * 1024 * 1024, { 'content-type': 'application/zip' });
    model.set(key, digest(body));
    keys.push(key);
  }
  const sourceBytes = [...model.values()].reduce((n, d) => n + Number(d.split(' ')[0]), 0);
  console.log(`source: ${OBJECTS} objects (${MULTIPART} multipart), ${sourceBytes} bytes, put in ${seconds(Date.now() - t0)}`);

  const service = (isolate: ReturnType<AdoptionHarness['isolate']>) =>
    new BackfillService({
      catalog: h.catalog,
      inner: h.inner,
      adoption: isolate.adoption,
      sources: new Map([[BUCKET, isolate.client]]),
      prices: () => prices,
      policy: () => policy,
      storagePrices: () => [0.015],
    });

  // ---- 1. The estimate ----
  const t1 = Date.now();
  const third = Math.floor(OBJECTS / 3);
  const first = killable(third);
  const a = h.isolate({ fetch: first.fetch });
  const e = await service(a).estimate(BUCKET, null, 500);
  console.log(
    `estimate: ${e.objects} objects, ${e.bytes} bytes, ${e.pages} pages, egress+requests $${e.egress.cost?.toFixed(6)} at aws-s3-standard, stored ${e.storage.bytes} bytes under 4+2, in ${seconds(Date.now() - t1)}`,
  );
  check(
    'estimate equals the source totals',
    e.objects === OBJECTS && e.bytes === sourceBytes && e.next === null,
    `${e.objects}/${OBJECTS}, ${e.bytes}/${sourceBytes}`,
  );
  check('estimate made no GET', a.client.sent.get === 0);

  // ---- 2. The backfill, killed twice, with clients ----
  const t2 = Date.now();
  const deleted = new Set<string>();
  let clientGets = 0;
  /** Runs batches (as the cron does) until the pass completes, or the isolate is killed (its run abandoned mid-object). */
  const drive = async (isolate: ReturnType<AdoptionHarness['isolate']>, killed: Promise<void>) => {
    const s = service(isolate);
    const dead = killed.then(() => 'killed' as const);
    const started = await Promise.race([s.start(BUCKET, { maxObjects: BATCH, ms: 600_000 }).then((r) => r.report), dead]);
    if (started === 'killed') return 'killed';
    let r = started;
    for (;;) {
      if (r.passesCompleted) return 'done';
      const next = await Promise.race([s.run(BUCKET, { maxObjects: BATCH, ms: 600_000 }), dead]);
      if (next === 'killed') return 'killed';
      r = next;
    }
  };
  /** Clients meanwhile: misses of keys not adopted yet (through the driving isolate), then mixed writes and deletes. */
  const clients = async (isolate: ReturnType<AdoptionHarness['isolate']>, misses: string[], writes: string[]) => {
    await Promise.all(
      misses.map(async (key) => {
        clientGets++;
        const res = await isolate.send(key);
        const body = new Uint8Array(await res.arrayBuffer());
        if (res.status !== 200 || digest(body) !== model.get(key)) throw new Error(`client miss ${key}: ${res.status}`);
      }),
    );
    for (const [i, key] of writes.entries()) {
      if (i % 2) {
        const res = await isolate.send(key, { method: 'DELETE' });
        if (res.status !== 204) throw new Error(`DELETE ${key}: ${res.status}`);
        deleted.add(key);
        model.delete(key);
      } else {
        const body = new Uint8Array(randomBytes(100 + i));
        const res = await isolate.send(key, { method: 'PUT', body, headers: { 'content-length': String(body.byteLength) } });
        if (res.status !== 200) throw new Error(`PUT ${key}: ${res.status}`);
        await res.arrayBuffer();
        model.set(key, digest(body));
      }
    }
  };
  const late = [...keys].sort().reverse(); // the walk reaches these last: client misses are still misses
  const missed = late.filter((k) => !k.startsWith('multi/')).slice(0, MISSES);
  const written = late.filter((k) => !k.startsWith('multi/')).slice(MISSES, MISSES + WRITES);
  const killedA = await drive(a, first.killed);
  // B's clients run beside its backfill; B is killed at its `third`-th object GET (client misses count too).
  const second = killable(third);
  const b = h.isolate({ fetch: second.fetch });
  const [killedB] = await Promise.all([drive(b, second.killed), clients(b, missed.slice(0, MISSES / 2), written.slice(0, WRITES / 2))]);
  const c = h.isolate();
  const [finished] = await Promise.all([drive(c, new Promise(() => {})), clients(c, missed.slice(MISSES / 2), written.slice(WRITES / 2))]);
  await h.settled();
  const backfillMs = Date.now() - t2;
  const progress = await service(c).progressOf(BUCKET);
  const gets = a.client.sent.get + b.client.sent.get + c.client.sent.get;
  const lists = a.client.sent.list + b.client.sent.list + c.client.sent.list;
  console.log(
    `backfill: ${killedA}, ${killedB}, ${finished} in ${seconds(backfillMs)}; ${progress.totals.adopted} adopted by the backfill as recorded, ${progress.last?.held} found held, ${progress.last?.deleted} deleted through shardgate`,
  );
  console.log(
    `  source requests: ${gets} GET (A ${a.client.sent.get}, B ${b.client.sent.get}, C ${c.client.sent.get}), ${lists} LIST; client misses ${clientGets}; egress recorded ${progress.egress.bytes} bytes, $${progress.egress.cost?.toFixed(6)}`,
  );
  console.log(
    `  rate: ${(OBJECTS / (backfillMs / 1000)).toFixed(0)} objects/s, ${(sourceBytes / (backfillMs / 1000) / 1024 / 1024).toFixed(1)} MiB/s (in-process, memory backends)`,
  );
  check('the backfill completed a clean pass', progress.complete && finished === 'done');
  check(
    'source GETs <= objects + client misses + 2 (one object in flight at each kill)',
    gets <= OBJECTS + clientGets + 2,
    `${gets} <= ${OBJECTS} + ${clientGets} + 2`,
  );

  // ---- 3. What clients see ----
  const t3 = Date.now();
  const expected = [...model.keys()].sort(utf8Order);
  const flat = await listKeys(c.send, '', null, 1000, false);
  check('listing (pages of 1000) equals the model', same(flat, expected), `${flat.length} keys, ${expected.length} expected`);
  const grouped = await listKeys(c.send, '', '/', 1000, false);
  const prefixes = [...new Set(expected.map((k) => (k.includes('/') ? `${k.slice(0, k.indexOf('/') + 1)}` : k)))].sort(utf8Order);
  check('listing with delimiter "/" equals the model', same(grouped, prefixes), `${grouped.length} entries`);
  const small = await listKeys(c.send, 'p3/', null, 7, true);
  check(
    'listing p3/ in pages of 7, encoding-type url, equals the model',
    same(
      small,
      expected.filter((k) => k.startsWith('p3/')),
    ),
    `${small.length} keys`,
  );
  const gotten = async () => {
    let bad = 0;
    for (const key of expected) {
      const res = await c.send(key);
      const body = new Uint8Array(await res.arrayBuffer());
      if (res.status !== 200 || digest(body) !== model.get(key)) bad++;
    }
    for (const key of deleted) if ((await c.send(key)).status !== 404) bad++;
    return bad;
  };
  const getsBefore = c.client.sent.get;
  const bad = await gotten();
  check('every object reads back byte-identical; every write won; no deleted key returns', bad === 0, `${bad} wrong of ${expected.length + deleted.size}`);
  check('those reads made no source GET (all adopted)', c.client.sent.get === getsBefore);
  console.log(`  reads checked in ${seconds(Date.now() - t3)}`);

  // ---- 4. Detached ----
  const detached = await service(c).detach(BUCKET, false);
  check('detach allowed once complete', detached.detached && !detached.forced, detached.reason ?? '');
  const sent = JSON.stringify(c.client.sent);
  const after = await listKeys(c.send, '', null, 1000, false);
  const badAfter = await gotten();
  check('after detach: same listing, same bytes, no source request', same(after, expected) && badAfter === 0 && JSON.stringify(c.client.sent) === sent);

  const failed = checks.filter(([, ok]) => !ok).length;
  console.log(`\n${checks.length - failed}/${checks.length} checks ok`);
  return failed ? 1 : 0;
}

const utf8Order = (x: string, y: string) => Buffer.compare(Buffer.from(x), Buffer.from(y));
const same = (x: string[], y: string[]) => x.length === y.length && x.every((k, i) => k === y[i]);

/** Keys and common prefixes of a whole ListObjectsV2 walk through the gateway. */
async function listKeys(send: AdoptionHarness['gateway'], prefix: string, delimiter: string | null, maxKeys: number, url: boolean): Promise<string[]> {
  const out: string[] = [];
  let token: string | null = null;
  for (;;) {
    const q: string[] = ['list-type=2', `max-keys=${maxKeys}`, `prefix=${encodeURIComponent(prefix)}`];
    if (delimiter) q.push(`delimiter=${encodeURIComponent(delimiter)}`);
    if (url) q.push('encoding-type=url');
    if (token) q.push(`continuation-token=${encodeURIComponent(token)}`);
    const xml: string = await (await send('', { query: q.join('&') })).text();
    const decode = (s: string) => {
      const text = s
        .replace(/&quot;/g, '"')
        .replace(/&apos;/g, "'")
        .replace(/&lt;/g, '<')
        .replace(/&gt;/g, '>')
        .replace(/&amp;/g, '&');
      return xml.includes('<EncodingType>url</EncodingType>') ? decodeURIComponent(text.replace(/\+/g, ' ')) : text;
    };
    const entries = [
      ...[...xml.matchAll(/<Contents>[\s\S]*?<Key>([^<]*)<\/Key>/g)].map((m) => decode(m[1]!)),
      ...[...xml.matchAll(/<CommonPrefixes>\s*<Prefix>([^<]*)<\/Prefix>/g)].map((m) => decode(m[1]!)),
    ];
    out.push(...entries);
    token = /<NextContinuationToken>([^<]*)<\/NextContinuationToken>/.exec(xml)?.[1] ?? null;
    if (!token) return out.sort(utf8Order);
  }
}

process.exitCode = await main();
