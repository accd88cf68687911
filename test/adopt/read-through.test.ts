/**
 * Issue 41, first slice: a bucket with a source answers reads of objects it does not hold as the
 * source does (compared with the source's own answers), adopts an object on its first full GET
 * (then serves it after the source lost it), makes one source read of concurrent misses, keeps a
 * deleted key deleted and lets a PUT win.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { putSource, putSourceMultipart, startAdoptionHarness, type AdoptionHarness } from './harness.ts';

let h: AdoptionHarness;
const bytes = (n: number) => new Uint8Array(randomBytes(n));

beforeAll(async () => {
  h = await startAdoptionHarness();
}, 30_000);
afterAll(async () => {
  await h?.settled();
  await h?.dispose();
});

/** The parts of an answer a client sees: status, the stored headers, the bytes (an error: its code). */
async function answer(res: Response) {
  const body = new Uint8Array(await res.arrayBuffer());
  if (res.status >= 400) return { status: res.status, code: /<Code>([^<]*)<\/Code>/.exec(Buffer.from(body).toString())?.[1] ?? null };
  const headers: Record<string, string | null> = {};
  for (const name of [
    'etag',
    'last-modified',
    'content-type',
    'content-length',
    'content-range',
    'content-encoding',
    'content-disposition',
    'cache-control',
    'x-amz-meta-owner',
    'x-amz-meta-note',
  ])
    headers[name] = res.headers.get(name);
  return { status: res.status, headers, body: Buffer.from(body).toString('base64') };
}

describe('read-through of objects not yet adopted', () => {
  const headers = { 'content-type': 'application/x-report', 'x-amz-meta-owner': 'ada', 'cache-control': 'max-age=60', 'content-disposition': 'attachment' };
  let n = 0;

  it.each([
    ['HEAD', { method: 'HEAD' }],
    ['a range', { headers: { range: 'bytes=1000-70999' } }],
    ['a suffix range', { headers: { range: 'bytes=-500' } }],
    ['an open range', { headers: { range: 'bytes=299000-' } }],
    ['a range past the end', { headers: { range: 'bytes=400000-' } }],
    ['If-None-Match of its ETag', { headers: { 'if-none-match': '"placeholder"' } }],
    ['If-Match of its ETag', { headers: { 'if-match': '"placeholder"' } }],
    ['If-Match of another ETag', { headers: { 'if-match': '"0123456789abcdef0123456789abcdef"' } }],
    ['If-Modified-Since in the future', { headers: { 'if-modified-since': new Date(Date.now() + 86_400_000).toUTCString() } }],
    ['If-Unmodified-Since in the past', { headers: { 'if-unmodified-since': new Date(0).toUTCString() } }],
  ] as const)('%s: the gateway answers as the source does', async (_, init) => {
    // A key of its own: a read with data schedules the key's adoption, after which the shards answer.
    const key = `docs/report ${++n}+%.bin`;
    const etag = await putSource(h, key, bytes(300_000), headers);
    const resolved = JSON.parse(JSON.stringify(init).replace('"placeholder"', etag.replace(/"/g, '\\"')));
    const through = await answer(await h.gateway(key, resolved));
    const direct = await answer(await h.source(key, resolved));
    expect(through).toEqual(direct);
    expect([200, 206, 304, 412, 416]).toContain(direct.status);
    await h.settled();
  });

  it('a ranged GET schedules the adoption: its one background read stores the object, and the shards serve it once the source lost it', async () => {
    const key = 'docs/ranged-then-adopted';
    const body = bytes(250_000);
    const etag = await putSource(h, key, body, headers);
    const gets = h.client.sent.get;
    const adopted = h.adoption.adopted;
    const part = await h.gateway(key, { headers: { range: 'bytes=10-19' } });
    expect(Buffer.from(await part.arrayBuffer())).toEqual(Buffer.from(body.subarray(10, 20)));
    await h.settled();
    expect(h.adoption.adopted).toBe(adopted + 1);
    expect(h.client.sent.get - gets).toBe(2); // the client's range, the adoption's full read
    await h.source(key, { method: 'DELETE' });
    const whole = await h.gateway(key);
    expect(whole.headers.get('etag')).toBe(etag);
    expect(whole.headers.get('content-type')).toBe('application/x-report');
    expect(Buffer.from(await whole.arrayBuffer())).toEqual(Buffer.from(body));
  });

  it('a key the source does not have is 404 NoSuchKey, and the 404 is believed until the clock passes its time', async () => {
    const missing = await h.gateway('docs/not-there');
    expect(missing.status).toBe(404);
    expect(await missing.text()).toContain('<Code>NoSuchKey</Code>');
    await putSource(h, 'docs/not-there', bytes(10));
    const before = h.client.sent.get;
    expect((await h.gateway('docs/not-there')).status).toBe(404);
    expect(h.client.sent.get).toBe(before);
    h.clock.now += 6000;
    const later = await h.gateway('docs/not-there');
    expect(later.status).toBe(200);
    await later.arrayBuffer();
    await h.settled();
  });
});

describe('adopt on read', () => {
  it('a full GET streams the source bytes and adopts them; with the source object gone, the shards answer the same', async () => {
    const key = 'adopt/plain é.txt';
    const body = bytes(200_000);
    const etag = await putSource(h, key, body, { 'content-type': 'text/plain', 'x-amz-meta-note': 'kept' });
    const direct = await answer(await h.source(key));
    const first = await answer(await h.gateway(key));
    expect(first).toEqual(direct);
    await h.settled();
    expect((await h.source(key, { method: 'DELETE' })).status).toBe(204);
    const gets = h.client.sent.get;
    const later = await answer(await h.gateway(key));
    expect(later).toEqual(direct);
    expect(later.headers?.etag).toBe(etag);
    expect(h.client.sent.get).toBe(gets);
    const ranged = await answer(await h.gateway(key, { headers: { range: 'bytes=5-9' } }));
    expect(ranged.body).toBe(Buffer.from(body.subarray(5, 10)).toString('base64'));
  });

  it('a multipart object keeps its multipart ETag when adopted', async () => {
    const key = 'adopt/multi.bin';
    const body = bytes(11 * 1024 * 1024);
    const etag = await putSourceMultipart(h, key, body, 5 * 1024 * 1024, { 'content-type': 'application/zip' });
    expect(etag).toMatch(/-3"$/);
    const direct = await answer(await h.source(key));
    expect(await answer(await h.gateway(key))).toEqual(direct);
    await h.settled();
    await h.source(key, { method: 'DELETE' });
    const later = await answer(await h.gateway(key));
    expect(later.headers?.etag).toBe(etag);
    expect(later.body).toBe(direct.body);
  }, 30_000);

  it("GetObjectTagging of an object not adopted answers the source's tags; a HEAD does not ask for them", async () => {
    const key = 'adopt/tags-read';
    await putSource(h, key, bytes(300));
    const tagging = '<Tagging><TagSet><Tag><Key>z</Key><Value>last</Value></Tag><Tag><Key>env</Key><Value>prod</Value></Tag></TagSet></Tagging>';
    expect((await h.source(key, { method: 'PUT', query: 'tagging=', body: tagging })).status).toBe(200);
    const asked = h.client.sent.tagging;
    const adopted = h.adoption.adopted;
    expect((await h.gateway(key, { method: 'HEAD' })).status).toBe(200);
    expect(h.client.sent.tagging).toBe(asked);
    const ours = await (await h.gateway(key, { query: 'tagging=' })).text();
    const theirs = await (await h.source(key, { query: 'tagging=' })).text();
    const tagsOf = (xml: string) => [...xml.matchAll(/<Key>([^<]*)<\/Key><Value>([^<]*)<\/Value>/g)].map((m) => `${m[1]}=${m[2]}`).sort();
    expect(tagsOf(ours)).toEqual(['env=prod', 'z=last']);
    expect(tagsOf(ours)).toEqual(tagsOf(theirs));
    expect(h.client.sent.tagging).toBe(asked + 1);
    await h.settled();
    expect(h.adoption.adopted).toBe(adopted); // a tagging read adopts nothing, as a HEAD
  });

  it("the source's tags are set on the adopted object", async () => {
    const key = 'adopt/tagged';
    await putSource(h, key, bytes(2000));
    const tagging = '<Tagging><TagSet><Tag><Key>team</Key><Value>blue</Value></Tag><Tag><Key>a</Key><Value>1</Value></Tag></TagSet></Tagging>';
    expect((await h.source(key, { method: 'PUT', query: 'tagging=', body: tagging })).status).toBe(200);
    await (await h.gateway(key)).arrayBuffer();
    await h.settled();
    await h.source(key, { method: 'DELETE' });
    const xml = await (await h.gateway(key, { query: 'tagging=' })).text();
    expect([...xml.matchAll(/<Key>([^<]*)<\/Key><Value>([^<]*)<\/Value>/g)].map((m) => `${m[1]}=${m[2]}`)).toEqual(['a=1', 'team=blue']);
  });

  it('a plain-MD5 ETag the bytes do not match: the client gets what the source sends, nothing is adopted', async () => {
    const key = 'adopt/lying-etag';
    const body = bytes(100_000);
    await putSource(h, key, body);
    // The source's record of the ETag no longer matches its bytes (a damaged or rewritten object).
    const wrong = '0123456789abcdef0123456789abcdef';
    writeFileSync(join(h.server.directory, 'src', 'adopt', 'lying-etag._S3rver_object.md5'), wrong);
    const adopted = h.adoption.adopted;
    const res = await h.gateway(key);
    expect(res.headers.get('etag')).toBe(`"${wrong}"`);
    expect(Buffer.from(await res.arrayBuffer())).toEqual(Buffer.from(body));
    await h.settled();
    expect(h.adoption.adopted).toBe(adopted);
    await h.source(key, { method: 'DELETE' });
    expect((await h.gateway(key)).status).toBe(404);
  });

  it('concurrent full GETs of one key make one source GET, and every client gets the bytes', async () => {
    const key = 'adopt/popular';
    const body = bytes(150_000);
    await putSource(h, key, body);
    const gets = h.client.sent.get;
    const answers = await Promise.all(Array.from({ length: 8 }, () => h.gateway(key).then(answer)));
    await h.settled();
    expect(h.client.sent.get - gets).toBe(1);
    for (const a of answers) expect(a.body).toBe(Buffer.from(body).toString('base64'));
  });

  it('a client gone after its first bytes: the key is then served whole or not at all, never in part', async () => {
    const key = 'adopt/abandoned';
    const body = bytes(3 * 1024 * 1024);
    await putSource(h, key, body);
    const res = await h.gateway(key);
    const reader = res.body!.getReader();
    await reader.read();
    await reader.cancel('client went away');
    await h.settled();
    await h.source(key, { method: 'DELETE' });
    const later = await h.gateway(key);
    if (later.status === 200) expect(Buffer.from(await later.arrayBuffer()).equals(Buffer.from(body))).toBe(true);
    else expect(later.status).toBe(404);
  });

  it('a PUT while the object is being adopted wins; so does a DELETE', async () => {
    for (const write of ['PUT', 'DELETE'] as const) {
      const key = `adopt/raced-${write}`;
      await putSource(h, key, bytes(2 * 1024 * 1024));
      const reading = await h.gateway(key); // its adoption advances only as this client reads
      const mine = bytes(100);
      const done = await h.gateway(key, write === 'PUT' ? { method: 'PUT', body: mine, headers: { 'content-length': '100' } } : { method: 'DELETE' });
      expect(done.status).toBe(write === 'PUT' ? 200 : 204);
      await reading.arrayBuffer();
      await h.settled();
      const later = await h.gateway(key);
      if (write === 'PUT') expect(Buffer.from(await later.arrayBuffer())).toEqual(Buffer.from(mine));
      else expect(later.status).toBe(404);
    }
  });

  it("a read waiting on another reader's adoption past flightWaitMs reads the source itself", async () => {
    const key = 'adopt/slow-first-reader';
    const body = bytes(2 * 1024 * 1024);
    await putSource(h, key, body);
    const other = h.isolate({ flightWaitMs: 0 });
    const gets = other.client.sent.get;
    const first = await other.send(key); // its client reads nothing yet: the adoption waits on it
    const second = await other.send(key);
    expect(Buffer.from(await second.arrayBuffer()).equals(Buffer.from(body))).toBe(true);
    expect(other.client.sent.get - gets).toBe(2);
    expect(Buffer.from(await first.arrayBuffer()).equals(Buffer.from(body))).toBe(true);
    await h.settled();
  });

  it('HEAD never adopts', async () => {
    const key = 'adopt/head-only';
    await putSource(h, key, bytes(1000));
    const adopted = h.adoption.adopted;
    expect((await h.gateway(key, { method: 'HEAD' })).status).toBe(200);
    await h.settled();
    expect(h.adoption.adopted).toBe(adopted);
  });
});

describe('writes win', () => {
  it('a DELETE of a key only the source holds: it never reappears, in this isolate or another', async () => {
    const key = 'gone/secret plan';
    await putSource(h, key, bytes(500));
    expect((await h.gateway(key, { method: 'DELETE' })).status).toBe(204);
    for (const send of [h.gateway, h.isolate().send]) {
      expect((await send(key)).status).toBe(404);
      expect((await send(key, { method: 'HEAD' })).status).toBe(404);
      const listing = await (await send('', { query: 'list-type=2&prefix=gone%2F' })).text();
      expect(listing).not.toContain('secret plan');
    }
    // A later PUT through the gateway replaces the tombstone.
    const fresh = bytes(64);
    expect((await h.gateway(key, { method: 'PUT', body: fresh, headers: { 'content-length': '64' } })).status).toBe(200);
    expect(Buffer.from(await (await h.gateway(key)).arrayBuffer())).toEqual(Buffer.from(fresh));
    // Deleted again: gone again, though the source still holds it.
    await h.gateway(key, { method: 'DELETE' });
    expect((await h.gateway(key)).status).toBe(404);
    expect((await h.source(key, { method: 'HEAD' })).status).toBe(200);
  });

  it('a PUT over a source object wins, and the source is never written', async () => {
    const key = 'won/over';
    const old = bytes(700);
    const oldEtag = await putSource(h, key, old);
    const mine = bytes(900);
    const put = await h.gateway(key, { method: 'PUT', body: mine, headers: { 'content-length': '900' } });
    expect(put.status).toBe(200);
    const got = await h.gateway(key);
    expect(Buffer.from(await got.arrayBuffer())).toEqual(Buffer.from(mine));
    const src = await h.source(key);
    expect(src.headers.get('etag')).toBe(oldEtag);
    expect(Buffer.from(await src.arrayBuffer())).toEqual(Buffer.from(old));
  });

  it('tombstones are not keys: reads and writes of the reserved prefix are refused', async () => {
    await putSource(h, 'x/y', bytes(10));
    await h.gateway('x/y', { method: 'DELETE' });
    expect((await h.gateway('.shardgate-adopt/tombstone/x/y')).status).toBe(404);
    const put = await h.gateway('.shardgate-adopt/tombstone/z', { method: 'PUT', body: 'a', headers: { 'content-length': '1' } });
    expect(put.status).toBe(403);
    expect((await h.gateway('.shardgate-adopt/tombstone/x/y', { method: 'DELETE' })).status).toBe(403);
    const batch = '<Delete><Object><Key>.shardgate-adopt/tombstone/x/y</Key></Object></Delete>';
    const md5 = createHash('md5').update(batch).digest('base64');
    const multi = await h.gateway('', { method: 'POST', query: 'delete=', body: batch, headers: { 'content-md5': md5 } });
    expect(await multi.text()).toContain('<Code>AccessDenied</Code>');
    expect((await h.gateway('x/y')).status).toBe(404); // the tombstone held
  });
});

describe('attributes and a source that is down', () => {
  it('GetObjectAttributes of an object not yet adopted: the source ETag and size', async () => {
    const key = 'attrs/one';
    const etag = await putSource(h, key, bytes(4321));
    const res = await h.gateway(key, { query: 'attributes=', headers: { 'x-amz-object-attributes': 'ETag,ObjectSize' } });
    const xml = await res.text();
    expect(res.status).toBe(200);
    expect(xml).toContain(`<ETag>${etag.replace(/"/g, '')}</ETag>`);
    expect(xml).toContain('<ObjectSize>4321</ObjectSize>');
  });

  it('the source down: objects not adopted answer 503 SlowDown (never 404), adopted ones are served; back up, all read again', async () => {
    const adoptedKey = 'down/adopted';
    const adoptedBody = bytes(5000);
    await putSource(h, adoptedKey, adoptedBody);
    await (await h.gateway(adoptedKey)).arrayBuffer();
    await h.settled();
    const waitingKey = 'down/not-yet';
    const waitingBody = bytes(3000);
    await putSource(h, waitingKey, waitingBody);
    await h.server.stop();
    try {
      for (const init of [{}, { method: 'HEAD' }, { headers: { range: 'bytes=0-9' } }]) {
        const res = await h.gateway(waitingKey, init);
        expect(res.status).toBe(503);
        if (!('method' in init)) expect(await res.text()).toContain('<Code>SlowDown</Code>');
      }
      expect((await h.gateway('', { query: 'list-type=2' })).status).toBe(503);
      const served = await h.gateway(adoptedKey);
      expect(served.status).toBe(200);
      expect(Buffer.from(await served.arrayBuffer())).toEqual(Buffer.from(adoptedBody));
      // Failures in a row open the breaker: then no read waits on the source until it has cooled.
      for (let i = 0; i < 3; i++) await (await h.gateway(waitingKey, { method: 'HEAD' })).arrayBuffer();
      const sent = { ...h.client.sent };
      const refused = await h.gateway(waitingKey);
      expect(refused.status).toBe(503);
      expect(await refused.text()).toContain('not answering');
      expect(h.client.sent).toEqual(sent);
    } finally {
      await h.server.start();
    }
    expect((await h.gateway(waitingKey)).status).toBe(503); // still open: the clock has not moved
    h.clock.now += 11_000;
    const back = await h.gateway(waitingKey);
    expect(Buffer.from(await back.arrayBuffer())).toEqual(Buffer.from(waitingBody));
    await h.settled();
  }, 30_000);
});
