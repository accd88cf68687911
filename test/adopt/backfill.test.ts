/**
 * Issue 41, the background backfill: against an s3rver source and the real front door, the
 * backfill adopts every object once (source GETs counted), resumes from its checkpoint after its
 * driver is dropped (and after a run whose last checkpoint was lost), shares the single flight with
 * concurrent client misses, lets client writes and deletes made during it win, adopts again a
 * source object changed after its adoption (never a client's write, never a mix), prices the move
 * before it starts (figures equal to the source's totals), and refuses to detach the source until
 * a pass ended clean. The cases run in order over one source and gateway: each adds keys of its own.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createHash, randomBytes } from 'node:crypto';
import { BackfillService } from '../../worker/adopt/backfill-service.ts';
import { detachSource } from '../../worker/adopt/backfill-control.ts';
import { freshState, parseState } from '../../worker/model/adopt-backfill.ts';
import { storedBytes } from '../../worker/adopt/estimate.ts';
import type { Adoption } from '../../worker/adopt/adopting-store.ts';
import type { SourceClient } from '../../worker/adopt/source-client.ts';
import type { AdoptCatalog } from '../../worker/catalog/ports.ts';
import type { AdoptChainCatalog } from '../../worker/model/adopt-backfill.ts';
import { parseConfig, sourcePrices } from '../../worker/config/config.ts';
import { BUCKET, putSource, putSourceMultipart, startAdoptionHarness, type AdoptionHarness } from './harness.ts';

let h: AdoptionHarness;
const bytes = (n: number) => new Uint8Array(randomBytes(n));
const policy = parseConfig({
  backends: Array.from({ length: 6 }, (_, i) => ({ id: `m${i}`, kind: 'memory', domain: `z${i}` })),
  policies: { ec: { k: 4, m: 2, blockSize: 65536 } },
  defaultPolicy: 'ec',
}).policies.ec!;
const AWS = sourcePrices({ endpoint: 'https://s3.us-east-1.amazonaws.com', prices: 'aws-s3-standard' });

/** What the source holds, as the test put it: key -> bytes. */
const held = new Map<string, Uint8Array>();
/** A key a client overwrote during the backfill, with these bytes. */
let clientKey = '';
const mine = bytes(777);

function service(isolate: { adoption: Adoption; client: SourceClient }, catalog: AdoptCatalog & AdoptChainCatalog = h.catalog): BackfillService {
  return new BackfillService({
    catalog,
    inner: h.inner,
    adoption: isolate.adoption,
    sources: new Map([[BUCKET, isolate.client]]),
    prices: () => AWS,
    policy: () => policy,
    storagePrices: () => [0.015, 0.023],
    now: () => h.clock.now,
  });
}

async function seed(prefix: string, n: number): Promise<string[]> {
  const keys: string[] = [];
  for (let i = 0; i < n; i++) {
    const key = `${prefix}/${['plain', 'with space', 'ünï', 'a+b', '100%'][i % 5]} ${i}.bin`;
    const body = bytes(1000 + ((i * 7919) % 90_000));
    await putSource(h, key, body, { 'content-type': 'application/x-test', 'x-amz-meta-n': String(i) });
    held.set(key, body);
    keys.push(key);
  }
  return keys;
}

/** Every key, size and ETag of a ListObjectsV2 walk (pages of 7, encoding-type url). */
async function listAll(send: AdoptionHarness['source']): Promise<string[]> {
  const out: string[] = [];
  let token: string | null = null;
  for (;;) {
    const query: string = `list-type=2&max-keys=7&encoding-type=url${token ? `&continuation-token=${encodeURIComponent(token)}` : ''}`;
    const xml: string = await (await send('', { query })).text();
    // s3rver does not encode keys (nor say so); the gateway does, and says so.
    const decode = (k: string) => (xml.includes('<EncodingType>url</EncodingType>') ? decodeURIComponent(k.replace(/\+/g, ' ')) : k);
    for (const c of xml.match(/<Contents>[\s\S]*?<\/Contents>/g) ?? [])
      out.push(
        `${decode(/<Key>([^<]*)<\/Key>/.exec(c)![1]!)} ${/<Size>(\d+)<\/Size>/.exec(c)![1]} ${/<ETag>([^<]*)<\/ETag>/.exec(c)![1]!.replace(/&quot;/g, '"')}`,
      );
    token = /<NextContinuationToken>([^<]*)<\/NextContinuationToken>/.exec(xml)?.[1] ?? null;
    if (!token) return out;
  }
}

/** A GET through the gateway: the body's length and SHA-256 (compared as bodies are: a deep equal of megabytes is slow), or the status. */
async function gatewayBytes(key: string, send = h.gateway): Promise<string | number> {
  const res = await send(key);
  const body = Buffer.from(await res.arrayBuffer());
  return res.status === 200 ? digest(body) : res.status;
}
const digest = (b: Uint8Array) => `${b.byteLength} ${createHash('sha256').update(b).digest('hex')}`;

const state = async () => parseState(await h.catalog.getAdoptState(BUCKET));

beforeAll(async () => {
  h = await startAdoptionHarness();
}, 30_000);
afterAll(async () => {
  await h?.settled();
  await h?.dispose();
});

describe('backfill', () => {
  it('--estimate walks the listing only and prices the move: its figures are the source totals', async () => {
    await seed('a', 30);
    const big = bytes(6 * 1024 * 1024 + 10);
    await putSourceMultipart(h, 'a/multi part.zip', big, 5 * 1024 * 1024);
    held.set('a/multi part.zip', big);
    const s = service(h);
    const gets = h.client.sent.get;
    // Pages of 8, two pages per call: the CLI's way, calls added up.
    let after: string | null = null;
    const sum = { objects: 0, bytes: 0, cost: 0, stored: 0, pages: 0, multipart: 0, heads: 0 };
    for (;;) {
      const e = await s.estimate(BUCKET, after, 2, 8);
      sum.objects += e.objects;
      sum.bytes += e.bytes;
      sum.cost += e.egress.cost!;
      sum.stored += e.storage.bytes;
      sum.pages += e.pages;
      sum.multipart += e.multipart;
      sum.heads += e.requests.heads;
      if (e.next === null) break;
      after = e.next;
    }
    const totalBytes = [...held.values()].reduce((n, b) => n + b.byteLength, 0);
    expect(sum.objects).toBe(31);
    expect(sum.bytes).toBe(totalBytes);
    expect(sum.pages).toBe(4);
    expect(sum.multipart).toBe(1);
    expect(sum.stored).toBe([...held.values()].reduce((n, b) => n + storedBytes(b.byteLength, policy), 0));
    expect(sum.heads).toBe(2); // the multipart object's two parts: a HEAD each (its part boundaries)
    // A GET and (at most) a GetObjectTagging per object, a HEAD per part of a multipart one, a LIST per page.
    expect(sum.cost).toBeCloseTo((totalBytes / 1024 ** 3) * 0.09 + (64 / 1000) * 0.0004 + (4 / 1000) * 0.005, 12);
    expect(h.client.sent.get).toBe(gets); // no GET
    // One call over the whole listing is kept as the total "time left" is read against.
    const whole = await s.estimate(BUCKET, null, 100);
    expect(whole.next).toBeNull();
    expect((await state())?.estimate).toMatchObject({ objects: 31, bytes: totalBytes });
    expect((await state())?.startedAt).toBeNull(); // an estimate starts nothing
  });

  it('detach is refused until the backfill has run', async () => {
    const answer = await service(h).detach(BUCKET, false);
    expect(answer.detached).toBe(false);
    expect(answer.reason).toMatch(/not been started/);
  });

  it('adopts every object once, resuming from its checkpoint after a run killed mid-object and after its driver is dropped', async () => {
    // Isolate A is killed at its 9th object GET: that GET never answers, and A does nothing more.
    let objectGets = 0;
    const frozen = new Promise<Response>(() => {});
    const isObjectGet = (req: Request) => req.method === 'GET' && !/[?&](list-type|tagging)=?/.test(req.url);
    const first = h.isolate({ fetch: (req) => (isObjectGet(req) && ++objectGets > 8 ? frozen : fetch(req)) });
    void service(first).start(BUCKET, { maxObjects: 13, ms: 60_000, pageSize: 5 }); // never ends
    await vi.waitFor(() => expect(objectGets).toBe(9), { timeout: 10_000, interval: 20 });
    const sorted = [...held.keys()].sort();
    // The checkpoint after every object read: the killed run's eight adoptions are all counted.
    const killed = await state();
    expect(killed?.cursor).toBe(sorted[7]);
    expect(killed?.pass).toMatchObject({ adopted: 8, listed: 8 });
    // Another isolate takes over (the first is gone): it goes on from the ninth key.
    const second = h.isolate();
    const s2 = service(second);
    let r = await s2.run(BUCKET, { maxObjects: 5, ms: 60_000, pageSize: 5 });
    expect(r).toMatchObject({ held: 0, adopted: 5 });
    while (r.stopped) r = await s2.run(BUCKET, { maxObjects: 5, ms: 60_000, pageSize: 5 });
    expect(r.passesCompleted).toBe(1);
    // One source GET per object, and the one in flight at the kill (read again by the second isolate).
    expect(first.client.sent.get + second.client.sent.get).toBe(32);
    const p = await s2.progressOf(BUCKET);
    const total = [...held.values()].reduce((n, b) => n + b.byteLength, 0);
    expect(p).toMatchObject({ complete: true, passes: 1, phase: 'waiting', bytesLeft: 0, secondsRemaining: 0 });
    // Nothing adopted is missing from the figures; the killed GET (no byte answered) is not counted.
    expect(p.totals).toMatchObject({ adopted: 31, bytes: total, egressBytes: total, gets: 31, taggings: 31 }); // s3rver says nothing of tags
    expect(p.last).toMatchObject({ listed: 31, adopted: 31, held: 0, failed: 0, changed: 0, listedBytes: total });
    const getClass = p.totals.gets + (p.totals.taggings ?? 0) + (p.totals.heads ?? 0);
    expect(getClass).toBe(31 + 31 + 2); // the multipart object's two parts asked by a HEAD each
    expect(p.egress.cost).toBeCloseTo((total / 1024 ** 3) * 0.09 + (getClass / 1000) * 0.0004 + (p.totals.lists / 1000) * 0.005, 12);
    // Listings through the gateway equal the source's; the shards serve every byte (no source GET).
    expect(await listAll(h.gateway)).toEqual(await listAll(h.source));
    const gets = h.client.sent.get;
    for (const [key, body] of held) expect(await gatewayBytes(key)).toBe(digest(body));
    expect(h.client.sent.get).toBe(gets);
    // A cron run soon after a clean pass does nothing; a day later (repassHours' default) it walks
    // the source again, finding everything held (no GET).
    expect((await s2.run(BUCKET, { maxObjects: 5, ms: 60_000 })).idle).toBe('waiting');
    h.clock.now += 24 * 3_600_000 - 1;
    expect((await s2.run(BUCKET, { maxObjects: 5, ms: 60_000 })).idle).toBe('waiting');
    h.clock.now += 1;
    const secondGets = second.client.sent.get;
    const repass = await s2.run(BUCKET, { maxObjects: 5, ms: 60_000 });
    expect(repass).toMatchObject({ passesCompleted: 1, held: 31, adopted: 0 });
    expect(second.client.sent.get).toBe(secondGets);
  });

  it('one source GET per object while clients miss the same keys concurrently', async () => {
    const keys = await seed('b', 16);
    const gets = h.client.sent.get;
    const s = service(h);
    const clients = [
      ...keys.map((k) => gatewayBytes(k)),
      ...Array.from({ length: 8 }, () => gatewayBytes(keys[5]!)), // 8 more misses of one key
    ];
    const run = s.start(BUCKET, { maxObjects: 100, ms: 60_000, pageSize: 6 });
    const answers = await Promise.all(clients);
    const { report } = await run;
    await h.settled();
    for (const [i, k] of keys.entries()) expect(answers[i]).toBe(digest(held.get(k)!));
    for (const a of answers.slice(keys.length)) expect(a).toBe(digest(held.get(keys[5]!)!));
    expect(report.passesCompleted).toBe(1);
    expect(report.adopted + report.held).toBe(47);
    expect(h.client.sent.get - gets).toBe(16);
    expect(await listAll(h.gateway)).toEqual(await listAll(h.source));
  });

  it('client writes and deletes made during the backfill win, and a deleted key never returns', async () => {
    const keys = await seed('c', 20);
    const s = service(h);
    const first = await s.start(BUCKET, { maxObjects: 4, ms: 60_000, pageSize: 10 });
    expect(first.report.stopped).toBe(true);
    const adopted = keys.filter((k) => k < first.progress.cursor!);
    const later = keys.filter((k) => k > first.progress.cursor!);
    const overwritten = [adopted[0]!, ...later.slice(0, 4)];
    clientKey = adopted[0]!;
    const deleted = [adopted[1]!, ...later.slice(4, 9)];
    // Writes and deletes interleaved with the rest of the walk.
    const run = (async () => {
      let r = await s.run(BUCKET, { maxObjects: 3, ms: 60_000, pageSize: 10 });
      while (r.stopped) r = await s.run(BUCKET, { maxObjects: 3, ms: 60_000, pageSize: 10 });
      return r;
    })();
    await Promise.all([
      ...overwritten.map(async (k) => expect((await h.gateway(k, { method: 'PUT', body: mine, headers: { 'content-length': '777' } })).status).toBe(200)),
      ...deleted.map(async (k) => expect((await h.gateway(k, { method: 'DELETE' })).status).toBe(204)),
    ]);
    await run;
    await h.settled();
    for (const k of overwritten) expect(await gatewayBytes(k)).toBe(digest(mine));
    for (const k of deleted) expect(await gatewayBytes(k)).toBe(404);
    // Another full pass, and a fresh isolate: still deleted, still the client's bytes.
    await s.start(BUCKET, { maxObjects: 100, ms: 60_000 });
    const fresh = h.isolate();
    for (const k of deleted) expect(await gatewayBytes(k, fresh.send)).toBe(404);
    for (const k of overwritten) expect(await gatewayBytes(k, fresh.send)).toBe(digest(mine));
    const listed = await listAll(h.gateway);
    for (const k of deleted) expect(listed.some((l) => l.startsWith(`${k} `))).toBe(false);
    for (const k of overwritten) expect(listed.some((l) => l.startsWith(`${k} 777 `))).toBe(true);
    expect((await s.progressOf(BUCKET)).last).toMatchObject({ deleted: 6, failed: 0 });
  });

  it('a key whose adopted version a client deleted by its version id never returns; a version delete that deletes nothing hides nothing', async () => {
    const [gone, kept] = await seed('v', 2);
    const s = service(h);
    await s.start(BUCKET, { maxObjects: 100, ms: 60_000 });
    const head = await h.gateway(gone!, { method: 'HEAD' });
    expect(head.status).toBe(200);
    const versionId = head.headers.get('x-amz-version-id') ?? 'null';
    // A version id that names nothing: refused, and the source's object stays visible.
    expect((await h.gateway(kept!, { method: 'DELETE', query: 'versionId=3sL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY' })).status).toBeGreaterThanOrEqual(400);
    expect((await h.gateway(gone!, { method: 'DELETE', query: `versionId=${encodeURIComponent(versionId)}` })).status).toBe(204);
    expect(await gatewayBytes(gone!)).toBe(404);
    // Another pass (the source still holds it) and a fresh isolate: still gone; the other key still there.
    await s.start(BUCKET, { maxObjects: 100, ms: 60_000 });
    await h.settled();
    const fresh = h.isolate();
    expect(await gatewayBytes(gone!, fresh.send)).toBe(404);
    expect(await gatewayBytes(kept!, fresh.send)).toBe(digest(held.get(kept!)!));
    expect((await listAll(h.gateway)).some((l) => l.startsWith(`${gone} `))).toBe(false);
    // The same through DeleteObjects: a version deleted by id never returns; a version naming nothing hides nothing.
    const [batchGone, batchKept] = await seed('w', 2);
    await s.start(BUCKET, { maxObjects: 100, ms: 60_000 });
    const id = (await h.gateway(batchGone!, { method: 'HEAD' })).headers.get('x-amz-version-id') ?? 'null';
    const xml = (key: string, v: string) => `<Object><Key>${key.replace(/&/g, '&amp;')}</Key><VersionId>${v}</VersionId></Object>`;
    const body = `<Delete>${xml(batchGone!, id)}${xml(batchKept!, '3sL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY')}</Delete>`;
    const md5 = createHash('md5').update(body).digest('base64');
    const answer = await h.gateway('', { method: 'POST', query: 'delete', body, headers: { 'content-md5': md5, 'content-length': String(body.length) } });
    expect(answer.status, await answer.clone().text()).toBe(200);
    await s.start(BUCKET, { maxObjects: 100, ms: 60_000 });
    await h.settled();
    expect(await gatewayBytes(batchGone!, h.isolate().send)).toBe(404);
    expect(await gatewayBytes(batchKept!, h.isolate().send)).toBe(digest(held.get(batchKept!)!));
    held.delete(gone!);
    held.delete(batchGone!);
  });

  it('a source object changed after its adoption is adopted again; a key a client wrote is not; a change during the walk is never a mix', async () => {
    const s = service(h);
    const [aKey] = [...held.keys()].filter((k) => k.startsWith('a/')).sort();
    const changed = bytes(4321);
    await putSource(h, aKey!, changed);
    await putSource(h, clientKey, bytes(999));
    // A key changed in the source between the listing and its read.
    const [racy] = await seed('d', 1);
    const v2 = bytes(5555);
    const list = h.client.list.bind(h.client);
    let once = true;
    h.client.list = async (r) => {
      const page = await list(r);
      if (once && page.objects.some((o) => o.key === racy)) {
        once = false;
        await putSource(h, racy!, v2);
      }
      return page;
    };
    const { report } = await s.start(BUCKET, { maxObjects: 100, ms: 60_000 });
    h.client.list = list;
    expect(report).toMatchObject({ readopted: 1, changed: 1, failed: 0, passesCompleted: 1 });
    const p = await s.progressOf(BUCKET);
    expect(p.complete).toBe(false); // the pass did not end clean
    expect(p.phase).toBe('walking'); // the next run goes again at once
    const refused = await s.detach(BUCKET, false);
    expect(refused.detached).toBe(false);
    expect(refused.reason).toMatch(/1 changed/);
    expect(await gatewayBytes(racy!)).toBe(digest(v2)); // a client read: the source's new object whole
    await h.settled();
    const again = await s.run(BUCKET, { maxObjects: 100, ms: 60_000 });
    expect(again).toMatchObject({ readopted: 0, changed: 0, passesCompleted: 1 });
    expect((await s.progressOf(BUCKET)).complete).toBe(true);
    // The source's objects gone: the shards serve the re-adopted bytes, and the client's.
    await h.source(aKey!, { method: 'DELETE' });
    await h.source(racy!, { method: 'DELETE' });
    h.clock.now += 10_000;
    expect(await gatewayBytes(aKey!)).toBe(digest(changed));
    expect(await gatewayBytes(racy!)).toBe(digest(v2));
    expect(await gatewayBytes(clientKey)).toBe(digest(mine));
    held.delete(aKey!);
    held.delete(racy!);
  });

  it('a source that stops answering ends the run at its checkpoint; back up, the walk goes on from there', async () => {
    const keys = (await seed('f', 6)).sort();
    const s = service(h);
    const first = await s.start(BUCKET, { maxObjects: 2, ms: 60_000 });
    expect(first.report).toMatchObject({ adopted: 2, stopped: true });
    const cursor = first.progress.cursor;
    await h.server.stop();
    try {
      const down = await s.run(BUCKET, { maxObjects: 10, ms: 60_000 });
      expect(down).toMatchObject({ adopted: 0, failed: 0, stopped: true });
      // Its first request, the listing from the checkpoint, got no answer: nothing done, nothing lost.
      expect(down.problems[0]!.key).toBe(cursor);
      expect(down.problems[0]!.error).toMatch(/source:src/);
      const p = await s.progressOf(BUCKET);
      expect(p.cursor).toBe(cursor);
      expect(p.lastError?.key).toBe(cursor);
    } finally {
      await h.server.start();
    }
    // Down between the listing and the next GET: that key is not done, the checkpoint stays before it.
    const list = h.client.list.bind(h.client);
    h.client.list = async (r) => {
      const page = await list(r);
      await h.server.stop();
      return page;
    };
    try {
      const down = await s.run(BUCKET, { maxObjects: 10, ms: 60_000 });
      expect(down).toMatchObject({ adopted: 0, failed: 0, stopped: true });
      expect(down.problems[0]!.key).toBe(keys[2]);
      expect((await s.progressOf(BUCKET)).cursor).toBe(cursor);
    } finally {
      h.client.list = list;
      await h.server.start();
    }
    const back = await s.run(BUCKET, { maxObjects: 100, ms: 60_000 });
    expect(back).toMatchObject({ adopted: 4, passesCompleted: 1, failed: 0 });
    expect((await s.progressOf(BUCKET)).complete).toBe(true);
    for (const k of keys) expect(await gatewayBytes(k)).toBe(digest(held.get(k)!));
  }, 30_000);

  it('once complete the source may be detached; after it the source is never read', async () => {
    const s = service(h);
    const answer = await s.detach(BUCKET, false);
    expect(answer).toMatchObject({ detached: true, reason: null, forced: false });
    expect(answer.progress.phase).toBe('detached');
    await putSource(h, 'e/after detach', bytes(10));
    const sent = { ...h.client.sent };
    expect(await gatewayBytes('e/after detach')).toBe(404);
    expect((await h.gateway('e/after detach', { method: 'HEAD' })).status).toBe(404);
    const listed = await listAll(h.gateway);
    expect(listed.some((l) => l.startsWith('e/'))).toBe(false);
    expect(listed.some((l) => l.startsWith('.shardgate'))).toBe(false);
    expect((await s.run(BUCKET, { maxObjects: 10, ms: 60_000 })).idle).toBe('detached');
    expect(h.client.sent).toEqual(sent);
    // A delete now needs no tombstone (nothing reads the source): the key is simply gone.
    const [gone] = [...held.keys()].filter((k) => k.startsWith('b/'));
    expect((await h.gateway(gone!, { method: 'DELETE' })).status).toBe(204);
    expect(await gatewayBytes(gone!)).toBe(404);
    await expect(h.inner.headObject(BUCKET, `.shardgate-adopt/tombstone/${gone}`, { conditions: {} })).rejects.toThrow(/NoSuchKey|not exist/);
    held.delete(gone!);
    // Every object adopted is read from the shards.
    for (const [key, body] of held) if (!key.startsWith('c/')) expect(await gatewayBytes(key)).toBe(digest(body));
    expect(h.client.sent).toEqual(sent);
  });

  it('detach before a clean pass is refused with the reason, and done when forced', async () => {
    const rows = new Map<string, string>();
    const catalog: AdoptCatalog = {
      getAdoptState: async (b) => rows.get(b) ?? null,
      setAdoptState: async (b, v) => void (v === null ? rows.delete(b) : rows.set(b, v)),
    };
    const walking = { ...freshState(), startedAt: 1, inPass: true, cursor: 'k', pass: { ...freshState().pass, listed: 3 } };
    rows.set('x', JSON.stringify(walking));
    const refused = await detachSource(catalog, 'x', false, 5);
    expect(refused).toMatchObject({ detached: false, forced: false });
    expect(refused.reason).toMatch(/no pass .* 3 object/);
    const forced = await detachSource(catalog, 'x', true, 5);
    expect(forced).toMatchObject({ detached: true, forced: true });
    expect(parseState(rows.get('x')!)?.detachedAt).toBe(5);
  });
});
