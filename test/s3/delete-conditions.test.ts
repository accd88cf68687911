/**
 * Conditional deletes over HTTP, in Node through app.request() (no workerd), over the product's
 * EcStore and catalog: DeleteObject's If-Match, x-amz-if-match-last-modified-time and
 * x-amz-if-match-size, a DeleteObjects entry's ETag, LastModifiedTime and Size (mixed results, one
 * <Error> per failed entry), bad values (InvalidArgument), the read a condition needs, and that a
 * conditional delete is one catalog call (the check rides in the delete's own step).
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createApp } from '../../worker/app/app.ts';
import { Access } from '../../worker/model/access.ts';
import type { Authenticate } from '../../worker/s3/context.ts';
import { allowAllGate } from '../support/allow-all-gate.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { memoryEcStore, testS3Settings } from '../support/memory-store.ts';

const BASE = 'http://gw.test';

function setup(authenticate: Authenticate = allowAllGate) {
  const catalog = localCatalog();
  const { store } = memoryEcStore(catalog);
  const app = createApp({ store, config: store.config, authenticate, settings: testS3Settings({ maxObjectSize: 1024 }) });
  const send = (method: string, path: string, init: RequestInit = {}) => app.request(`${BASE}${path}`, { method, ...init });
  const put = async (path: string, body: string) => {
    const r = await send('PUT', path, { body, headers: { 'content-length': String(body.length) } });
    expect(r.status).toBe(200);
    return { etag: r.headers.get('etag')!, versionId: r.headers.get('x-amz-version-id') ?? undefined };
  };
  const head = async (path: string) => send('HEAD', path);
  const versioned = async (bucket: string) => {
    expect((await send('PUT', `/${bucket}`)).status).toBe(200);
    const body = '<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>';
    expect((await send('PUT', `/${bucket}?versioning`, { body })).status).toBe(200);
  };
  const deleteObjects = async (bucket: string, objects: string) => {
    const body = `<Delete>${objects}</Delete>`;
    const md5 = createHash('md5').update(body).digest('base64');
    const r = await send('POST', `/${bucket}?delete`, { body, headers: { 'content-md5': md5 } });
    expect(r.status).toBe(200);
    return await r.text();
  };
  return { catalog, send, put, head, versioned, deleteObjects };
}

const code = async (r: Response) => (await r.text()).match(/<Code>([^<]*)<\/Code>/)?.[1];

describe('DeleteObject with conditions', () => {
  it('a version named: a mismatch is 412 and keeps it, a match removes it, a version gone is 204', async () => {
    const { send, put, head, versioned } = setup();
    await versioned('bkt');
    const { etag, versionId } = await put('/bkt/k', 'hello');
    const lastModified = (await head(`/bkt/k?versionId=${versionId}`)).headers.get('last-modified')!;
    await put('/bkt/k', 'newer'); // the one named is not current
    for (const headers of [
      { 'if-match': '"bad"' },
      { 'x-amz-if-match-size': '6' },
      { 'x-amz-if-match-last-modified-time': 'Thu, 01 Jan 2015 00:00:00 GMT' },
    ] as Record<string, string>[]) {
      const r = await send('DELETE', `/bkt/k?versionId=${versionId}`, { headers });
      expect(r.status).toBe(412);
      expect(await code(r)).toBe('PreconditionFailed');
      expect((await head(`/bkt/k?versionId=${versionId}`)).status).toBe(200);
    }
    const ok = await send('DELETE', `/bkt/k?versionId=${versionId}`, {
      headers: { 'if-match': etag, 'x-amz-if-match-size': '5', 'x-amz-if-match-last-modified-time': lastModified },
    });
    expect(ok.status).toBe(204);
    expect(ok.headers.get('x-amz-delete-marker')).toBeNull();
    expect((await head(`/bkt/k?versionId=${versionId}`)).status).toBe(404);
    expect((await send('DELETE', `/bkt/k?versionId=${versionId}`, { headers: { 'if-match': '"bad"' } })).status).toBe(204);
  });

  it('no version named: the current object, a delete marker added on a match, NoSuchKey with none', async () => {
    const { send, put, versioned } = setup();
    await versioned('bkt');
    const { etag } = await put('/bkt/k', 'abc');
    expect((await send('DELETE', '/bkt/k', { headers: { 'x-amz-if-match-size': '4' } })).status).toBe(412);
    const r = await send('DELETE', '/bkt/k', { headers: { 'if-match': etag } });
    expect(r.status).toBe(204);
    expect(r.headers.get('x-amz-delete-marker')).toBe('true');
    const none = await send('DELETE', '/bkt/k', { headers: { 'if-match': '*' } });
    expect(none.status).toBe(404);
    expect(await code(none)).toBe('NoSuchKey');
  });

  it('bad values are InvalidArgument and delete nothing', async () => {
    const { send, put, head } = setup();
    expect((await send('PUT', '/bkt')).status).toBe(200);
    await put('/bkt/k', 'x');
    for (const headers of [
      { 'x-amz-if-match-size': '-1' },
      { 'x-amz-if-match-size': '1.5' },
      { 'x-amz-if-match-last-modified-time': 'yesterday' },
      { 'x-amz-if-match-last-modified-time': '2015' },
    ] as Record<string, string>[]) {
      const r = await send('DELETE', '/bkt/k', { headers });
      expect(r.status).toBe(400);
      expect(await code(r)).toBe('InvalidArgument');
    }
    expect((await head('/bkt/k')).status).toBe(200);
    // ISO 8601 is a time too (what XML carries), compared at one-second resolution.
    const seconds = new Date((await head('/bkt/k')).headers.get('last-modified')!).toISOString().replace('.000Z', '.999Z');
    expect((await send('DELETE', '/bkt/k', { headers: { 'x-amz-if-match-last-modified-time': seconds } })).status).toBe(204);
  });

  it('is one catalog call: the condition is checked in the delete step', async () => {
    const { catalog, send, put } = setup();
    expect((await send('PUT', '/bkt')).status).toBe(200);
    const { etag } = await put('/bkt/k', 'x');
    const before = new Map(catalog.namespace.calls);
    expect((await send('DELETE', '/bkt/k', { headers: { 'if-match': etag, 'x-amz-if-match-size': '1' } })).status).toBe(204);
    const made = [...catalog.namespace.calls].filter(([m, n]) => n !== (before.get(m) ?? 0)).map(([m, n]) => [m, n - (before.get(m) ?? 0)]);
    expect(made).toEqual([['removeManifest', 1]]);
  });

  it('needs read on the key as well as delete', async () => {
    const access = new Access([
      { buckets: ['bkt'], actions: ['write', 'delete'] },
      { buckets: ['bkt'], prefixes: ['seen/'], actions: ['read'] },
    ]);
    const { catalog, send, put, head, deleteObjects } = setup(async (request, ...rest) => ({ ...(await allowAllGate(request, ...rest)), access }));
    expect((await send('PUT', '/bkt')).status).toBe(200);
    await put('/bkt/blind/k', 'x');
    await put('/bkt/seen/k', 'x');
    const r = await send('DELETE', '/bkt/blind/k', { headers: { 'if-match': '*' } });
    expect(r.status).toBe(403);
    expect(await code(r)).toBe('AccessDenied');
    const batch = await deleteObjects('bkt', '<Object><Key>blind/k</Key><Size>1</Size></Object><Object><Key>seen/k</Key><Size>1</Size></Object>');
    expect(batch).toMatch(/<Error><Key>blind\/k<\/Key>.*<Code>AccessDenied<\/Code>/);
    expect(batch).toContain('<Deleted><Key>seen/k</Key>');
    expect((await head('/bkt/seen/k')).status).toBe(404);
    expect(await catalog.getManifest('bkt', 'blind/k')).not.toBeNull(); // refused twice, still there
    expect((await send('DELETE', '/bkt/blind/k')).status).toBe(204); // unconditional: delete is enough
  });
});

describe('DeleteObjects with conditions', () => {
  it("checks each entry on its own: mismatches are that key's PreconditionFailed, the others are deleted", async () => {
    const { put, head, versioned, deleteObjects } = setup();
    await versioned('bkt');
    const a = await put('/bkt/a', 'aaaa');
    const v = await put('/bkt/v', 'vv');
    await put('/bkt/v', 'vvv'); // `v`'s first version is not current
    const lm = new Date((await head('/bkt/a')).headers.get('last-modified')!).toISOString();
    const xml = await deleteObjects(
      'bkt',
      [
        `<Object><Key>a</Key><ETag>${a.etag}</ETag><Size>4</Size><LastModifiedTime>${lm}</LastModifiedTime></Object>`,
        `<Object><Key>v</Key><VersionId>${v.versionId}</VersionId><Size>3</Size></Object>`,
        `<Object><Key>v</Key><VersionId>${v.versionId}</VersionId><ETag>"bad"</ETag></Object>`,
        `<Object><Key>none</Key><ETag>*</ETag></Object>`,
        `<Object><Key>a</Key><Size>-4</Size></Object>`,
        `<Object><Key>v</Key><LastModifiedTime>2015-01-01T00:00:00Z</LastModifiedTime></Object>`,
      ].join(''),
    );
    const deleted = [...xml.matchAll(/<Deleted>(.*?)<\/Deleted>/g)].map((m) => m[1]);
    const errors = [...xml.matchAll(/<Error>.*?<Key>(.*?)<\/Key>.*?<Code>(.*?)<\/Code>.*?<\/Error>/g)].map((m) => `${m[1]}:${m[2]}`);
    expect(deleted).toHaveLength(1);
    expect(deleted[0]).toContain('<Key>a</Key>');
    expect(deleted[0]).toContain('<DeleteMarker>true</DeleteMarker>');
    expect(errors.sort()).toEqual(['a:InvalidArgument', 'none:NoSuchKey', 'v:PreconditionFailed', 'v:PreconditionFailed', 'v:PreconditionFailed']);
    expect((await head(`/bkt/v?versionId=${v.versionId}`)).status).toBe(200);
    expect((await head('/bkt/v')).status).toBe(200);
    // The version matched is deleted; once gone, its conditions no longer fail.
    const again = await deleteObjects('bkt', `<Object><Key>v</Key><VersionId>${v.versionId}</VersionId><Size>2</Size></Object>`);
    expect(again).toContain('<Deleted><Key>v</Key>');
    expect((await head(`/bkt/v?versionId=${v.versionId}`)).status).toBe(404);
    expect(await deleteObjects('bkt', `<Object><Key>v</Key><VersionId>${v.versionId}</VersionId><Size>9</Size></Object>`)).not.toContain('<Error>');
  });
});

// Conditional writes (If-Match, If-None-Match: *) on every write path: PutObject,
// CompleteMultipartUpload and CopyObject's destination answer 412 on a mismatch and 404 NoSuchKey
// for If-Match on an absent key; the condition is judged where the version is installed (the
// catalog's commit), not before the body is read: a writer whose body is still arriving loses to one
// that committed meanwhile, and of two concurrent writers holding one ETag exactly one wins.
describe('conditional writes: PutObject, CompleteMultipartUpload, CopyObject', () => {
  type Cond = Record<string, string>;
  /** [status, the new ETag (header or CompleteMultipartUploadResult's) or the error code]. */
  const answer = async (r: Response) => {
    const text = await r.text();
    const etag = r.headers.get('etag') ?? /<ETag>([^<]+)<\/ETag>/.exec(text.replaceAll('&quot;', '"'))?.[1] ?? null;
    return [r.status, r.status === 200 ? etag : /<Code>([^<]*)<\/Code>/.exec(text)?.[1]] as const;
  };
  const writes = () => {
    const s = setup();
    const putIf = async (key: string, body: string, headers: Cond = {}) =>
      answer(await s.send('PUT', `/bkt/${key}`, { body, headers: { 'content-length': String(body.length), ...headers } }));
    /** An upload of one part holding `body`; returns its completion, to send with conditions. */
    const upload = async (key: string, body: string) => {
      const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(await (await s.send('POST', `/bkt/${key}?uploads`)).text())![1]!;
      const part = await s.send('PUT', `/bkt/${key}?partNumber=1&uploadId=${uploadId}`, { body, headers: { 'content-length': String(body.length) } });
      expect(part.status).toBe(200);
      const xml = `<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>${part.headers.get('etag')}</ETag></Part></CompleteMultipartUpload>`;
      return async (headers: Cond = {}) => s.send('POST', `/bkt/${key}?uploadId=${uploadId}`, { body: xml, headers });
    };
    const current = async (key: string) => (await s.head(`/bkt/${key}`)).headers.get('etag');
    return { ...s, putIf, upload, current };
  };

  it('PutObject: If-None-Match * on an existing key and If-Match on a mismatch are 412; If-Match on an absent key 404', async () => {
    const { send, putIf } = writes();
    await send('PUT', '/bkt');
    expect(await putIf('k', 'x', { 'if-match': '*' })).toEqual([404, 'NoSuchKey']);
    expect(await putIf('k', 'x', { 'if-match': '"abc"' })).toEqual([404, 'NoSuchKey']);
    const [, etag] = await putIf('k', 'one', { 'if-none-match': '*' });
    expect(await putIf('k', 'x', { 'if-none-match': '*' })).toEqual([412, 'PreconditionFailed']);
    expect(await putIf('k', 'x', { 'if-match': '"abc"' })).toEqual([412, 'PreconditionFailed']);
    expect((await putIf('k', 'two', { 'if-match': etag! }))[0]).toBe(200);
    expect((await putIf('k', 'three', { 'if-match': '*' }))[0]).toBe(200);
  });

  it('CompleteMultipartUpload: the same answers, judged at completion (the parts were uploaded before)', async () => {
    const { send, upload } = writes();
    await send('PUT', '/bkt');
    const first = await upload('m', 'part one');
    expect(await answer(await first({ 'if-match': '*' }))).toEqual([404, 'NoSuchKey']);
    const [, etag] = await answer(await first({ 'if-none-match': '*' }));
    const second = await upload('m', 'part two');
    expect(await answer(await second({ 'if-none-match': '*' }))).toEqual([412, 'PreconditionFailed']);
    expect(await answer(await second({ 'if-match': '"abc"' }))).toEqual([412, 'PreconditionFailed']);
    expect((await second({ 'if-match': etag! })).status).toBe(200);
  });

  it("CopyObject: the conditions apply to the destination (AWS's If-Match / If-None-Match on CopyObject)", async () => {
    const { send, putIf } = writes();
    await send('PUT', '/bkt');
    const [, sourceEtag] = await putIf('src', 'source body');
    const copy = async (headers: Cond) => answer(await send('PUT', '/bkt/dst', { headers: { 'x-amz-copy-source': '/bkt/src', ...headers } }));
    expect(await copy({ 'if-match': sourceEtag! })).toEqual([404, 'NoSuchKey']);
    expect((await copy({ 'if-none-match': '*' }))[0]).toBe(200);
    expect(await copy({ 'if-none-match': '*' })).toEqual([412, 'PreconditionFailed']);
    expect(await copy({ 'if-match': '"abc"' })).toEqual([412, 'PreconditionFailed']);
    expect((await copy({ 'if-match': sourceEtag! }))[0]).toBe(200); // the copy's ETag is the source's
  });

  it('judged at the commit: a PUT whose body is still arriving loses to an If-Match writer that committed meanwhile', async () => {
    const { send, putIf, current } = writes();
    await send('PUT', '/bkt');
    const [, base] = await putIf('k', 'base');
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const bytes = new TextEncoder().encode('slow writer');
    const body = new ReadableStream<Uint8Array>({
      async pull(c) {
        await held;
        c.enqueue(bytes);
        c.close();
      },
    });
    const slow = send('PUT', '/bkt/k', { body, duplex: 'half', headers: { 'content-length': String(bytes.length), 'if-match': base! } } as RequestInit);
    await new Promise((r) => setTimeout(r, 20)); // the slow writer has passed its first check and waits for its body
    const [status, fast] = await putIf('k', 'fast writer', { 'if-match': base! });
    expect(status).toBe(200);
    release();
    expect(await answer(await slow)).toEqual([412, 'PreconditionFailed']);
    expect(await current('k')).toBe(fast);
  });

  it('two concurrent writers with the same If-Match: exactly one wins, for PutObject and for CompleteMultipartUpload', async () => {
    const { send, putIf, upload, current } = writes();
    await send('PUT', '/bkt');
    const [, base] = await putIf('k', 'base');
    const puts = await Promise.all(['writer a', 'writer b'].map((body) => putIf('k', body, { 'if-match': base! })));
    expect(puts.map(([s]) => s).sort()).toEqual([200, 412]);
    expect(await current('k')).toBe(puts.find(([s]) => s === 200)![1]);

    const [, mbase] = await putIf('m', 'base');
    const completions = [await upload('m', 'upload a'), await upload('m', 'upload b')];
    const done = await Promise.all(completions.map(async (complete) => answer(await complete({ 'if-match': mbase! }))));
    expect(done.map(([s]) => s).sort()).toEqual([200, 412]);
    expect(done.find(([s]) => s === 412)![1]).toBe('PreconditionFailed');
    expect(await current('m')).toBe(done.find(([s]) => s === 200)![1]);
  });
});
