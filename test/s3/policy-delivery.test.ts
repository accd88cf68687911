/**
 * How a bucket policy reaches the request path (model/bucket-settings.ts), through the real front
 * door in Node over the catalog's SQL in process, with two gateways sharing the catalog instances
 * and backends as two isolates of one deployment do:
 * - catalog round trips per request (counted at the instances, as the bench counts them): a PUT
 *   and a GET make the calls they make without policies, with none of their own, in a bucket
 *   without a policy and in one with a policy this isolate has seen; after a change made
 *   elsewhere, the next request repeats one call, then none again;
 * - a Deny put in one isolate refuses the very next request in the other, whatever its first
 *   catalog call (a read, a reservation, or the mutation itself), and nothing is stored, deleted
 *   or read for it: PUT (inline and coded), GET, HEAD, DeleteObject, DeleteObjects' entries,
 *   listings, HeadBucket, a copy's source, UploadPart, PostObject;
 * - a Deny removed in one isolate stops refusing in the other at once (its refusal is confirmed
 *   against the stored policy before it is answered);
 * - the catalog's fenced call: a stale stamp does nothing and answers the settings.
 */
import { storeText } from '../support/memory-store.ts';
import {
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteBucketPolicyCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutBucketPolicyCommand,
  PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ACCESS_KEY, SECRET } from '../auth/helpers/signers.ts';
import { sdk } from '../auth/mutation/bases.ts';
import { toRequest } from '../auth/mutation/wire.ts';
import { gateApp, GATE_HOST } from '../support/gate-app.ts';
import { settingsOf } from '../../worker/catalog/settings-stamp.ts';

const BUCKET = 'fz';
const OTHER = 'fz-other';

type Gateway = ReturnType<typeof gateApp>;

/** Two isolates of one gateway: `a` and `b`, with bucket fz holding `obj` and fz-other empty. */
async function twoIsolates() {
  const a = gateApp();
  const b = gateApp(undefined, undefined, a);
  await a.store.createBucket(BUCKET, { region: 'us-east-1' });
  await a.store.createBucket(OTHER, { region: 'us-east-1' });
  await storeText(a.store, BUCKET, 'obj', 'object body');
  return { a, b };
}

async function send(g: Gateway, command: unknown): Promise<Response> {
  return g.send(toRequest(await sdk(command, {}))!);
}

const codeOf = (text: string) => /<Code>([^<]+)<\/Code>/.exec(text)?.[1];

/** Round trips to the catalog's instances from now on, by method (shared by both isolates). */
function counted(g: Gateway): Map<string, number> {
  g.catalog.namespace.calls.clear();
  return g.catalog.namespace.calls;
}

function policy(...statements: Record<string, unknown>[]): string {
  return JSON.stringify({ Version: '2012-10-17', Statement: statements });
}

const DENY_ALL = policy({ Effect: 'Deny', Principal: '*', Action: 's3:*', Resource: [`arn:aws:s3:::${BUCKET}`, `arn:aws:s3:::${BUCKET}/*`] });
const DENY_LOCKED = policy({ Effect: 'Deny', Principal: '*', Action: 's3:PutObject', Resource: `arn:aws:s3:::${BUCKET}/locked/*` });

async function putPolicy(g: Gateway, text: string): Promise<void> {
  expect((await send(g, new PutBucketPolicyCommand({ Bucket: BUCKET, Policy: text }))).status).toBe(204);
}

async function exists(g: Gateway, bucket: string, key: string): Promise<boolean> {
  return g.store.headObject(bucket, key, { conditions: {} }).then(
    () => true,
    () => false,
  );
}

/** Blobs on the backends (shards of coded objects). */
async function blobs(g: Gateway): Promise<number> {
  let n = 0;
  for (const backend of g.backends) n += (await backend.list('')).entries.length;
  return n;
}

async function expectDenied(res: Response): Promise<void> {
  const text = await res.text();
  expect(res.status, text).toBe(403);
  if (text) expect(codeOf(text)).toBe('AccessDenied');
}

describe('catalog calls per request', () => {
  it('no policy: a PUT and a GET make only their own calls', async () => {
    const { a } = await twoIsolates();
    const calls = counted(a);
    expect((await send(a, new PutObjectCommand({ Bucket: BUCKET, Key: 'k', Body: 'small' }))).status).toBe(200);
    expect(Object.fromEntries(calls)).toEqual({ commitManifest: 1 });
    calls.clear();
    expect((await send(a, new PutObjectCommand({ Bucket: BUCKET, Key: 'big', Body: new Uint8Array(256 * 1024).fill(7) }))).status).toBe(200);
    expect(Object.fromEntries(calls)).toEqual({ prepareWrite: 1, commitManifest: 1 });
    calls.clear();
    expect((await send(a, new GetObjectCommand({ Bucket: BUCKET, Key: 'k' }))).status).toBe(200);
    expect(Object.fromEntries(calls)).toEqual({ getVersion: 1 });
  });

  it('a policy this isolate has seen costs nothing; a change made elsewhere costs the next request one repeated call', async () => {
    const { a, b } = await twoIsolates();
    await putPolicy(a, DENY_LOCKED);
    const calls = counted(a);
    expect((await send(a, new GetObjectCommand({ Bucket: BUCKET, Key: 'obj' }))).status).toBe(200);
    expect((await send(a, new PutObjectCommand({ Bucket: BUCKET, Key: 'free', Body: 'x' }))).status).toBe(200);
    expect(Object.fromEntries(calls)).toEqual({ getVersion: 1, commitManifest: 1 });

    // b has never seen the bucket's settings: its first request repeats its call once, then none.
    calls.clear();
    expect((await send(b, new GetObjectCommand({ Bucket: BUCKET, Key: 'obj' }))).status).toBe(200);
    expect(Object.fromEntries(calls)).toEqual({ getVersion: 2 });
    calls.clear();
    expect((await send(b, new GetObjectCommand({ Bucket: BUCKET, Key: 'obj' }))).status).toBe(200);
    expect(Object.fromEntries(calls)).toEqual({ getVersion: 1 });
    // Refused by b's view of the policy: confirmed against the stored one (one call), nothing else.
    calls.clear();
    await expectDenied(await send(b, new PutObjectCommand({ Bucket: BUCKET, Key: 'locked/x', Body: 'x' })));
    expect(Object.fromEntries(calls)).toEqual({ getBucketSettings: 1 });

    // Changed in a: b's next request repeats one call, and the one after makes none of its own.
    const sealed = policy({ Effect: 'Deny', Principal: '*', Action: 's3:PutObject', Resource: `arn:aws:s3:::${BUCKET}/sealed/*` });
    await putPolicy(a, sealed);
    calls.clear();
    expect((await send(b, new PutObjectCommand({ Bucket: BUCKET, Key: 'free-2', Body: 'x' }))).status).toBe(200);
    expect(Object.fromEntries(calls)).toEqual({ commitManifest: 2 });
    calls.clear();
    await expectDenied(await send(b, new PutObjectCommand({ Bucket: BUCKET, Key: 'sealed/x', Body: 'x' })));
    expect(Object.fromEntries(calls)).toEqual({ getBucketSettings: 1 });
    expect(await exists(b, BUCKET, 'sealed/x')).toBe(false);
    // Changed and changed back in a: one content has one stamp, so b's view is current (no call of its own).
    await putPolicy(a, DENY_LOCKED);
    await putPolicy(a, sealed);
    calls.clear();
    expect((await send(b, new GetObjectCommand({ Bucket: BUCKET, Key: 'free-2' }))).status).toBe(200);
    expect(Object.fromEntries(calls)).toEqual({ getVersion: 1 });
    await putPolicy(a, DENY_LOCKED);
    calls.clear();
    expect((await send(b, new PutObjectCommand({ Bucket: BUCKET, Key: 'sealed/y', Body: 'x' }))).status).toBe(200);
    expect(Object.fromEntries(calls)).toEqual({ getBucketSettings: 1, commitManifest: 1 });
  });
});

describe('a Deny put in one isolate refuses the next request in another', () => {
  /** b put a Deny of everything; a never saw it. */
  async function denied() {
    const { a, b } = await twoIsolates();
    await putPolicy(b, DENY_ALL);
    return { a, b, calls: counted(a) };
  }

  it("PUT, inline and coded: refused, nothing stored (a coded one's shards deleted)", async () => {
    const { a } = await denied();
    const before = await blobs(a);
    await expectDenied(await send(a, new PutObjectCommand({ Bucket: BUCKET, Key: 'small', Body: 'x' })));
    expect(await exists(a, BUCKET, 'small')).toBe(false);
    const { a: a2 } = await denied();
    await expectDenied(await send(a2, new PutObjectCommand({ Bucket: BUCKET, Key: 'big', Body: new Uint8Array(256 * 1024).fill(1) })));
    expect(await exists(a2, BUCKET, 'big')).toBe(false);
    expect(await blobs(a2)).toBe(before);
  });

  it('GET and HEAD: refused, no body', async () => {
    for (const command of [new GetObjectCommand({ Bucket: BUCKET, Key: 'obj' }), new HeadObjectCommand({ Bucket: BUCKET, Key: 'obj' })]) {
      const { a } = await denied();
      const res = await send(a, command);
      expect(res.status).toBe(403);
      expect(await res.text()).not.toContain('object body');
    }
  });

  it('DeleteObject, whose first call is the delete itself: refused, the object stays', async () => {
    const { a, calls } = await denied();
    await expectDenied(await send(a, new DeleteObjectCommand({ Bucket: BUCKET, Key: 'obj' })));
    expect(Object.fromEntries(calls)).toEqual({ removeManifest: 1 });
    expect(await exists(a, BUCKET, 'obj')).toBe(true);
  });

  it('DeleteObjects: each entry AccessDenied, the object stays', async () => {
    const { a } = await denied();
    const res = await send(a, new DeleteObjectsCommand({ Bucket: BUCKET, Delete: { Objects: [{ Key: 'obj' }] } }));
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain('<Code>AccessDenied</Code>');
    expect(text).not.toContain('<Deleted>');
    expect(await exists(a, BUCKET, 'obj')).toBe(true);
  });

  it('ListObjectsV2 and HeadBucket: refused', async () => {
    for (const command of [new ListObjectsV2Command({ Bucket: BUCKET }), new HeadBucketCommand({ Bucket: BUCKET })]) {
      const { a } = await denied();
      const res = await send(a, command);
      expect(res.status).toBe(403);
      expect(await res.text()).not.toContain('<Key>obj</Key>');
    }
  });

  it('a copy whose source bucket denies: refused, nothing copied into the other bucket', async () => {
    const { a } = await denied();
    await expectDenied(await send(a, new CopyObjectCommand({ Bucket: OTHER, Key: 'copy', CopySource: `${BUCKET}/obj` })));
    expect(await exists(a, OTHER, 'copy')).toBe(false);
  });

  it('UploadPart of an upload begun before: refused, no part recorded; CreateMultipartUpload refused', async () => {
    const { a, b } = await twoIsolates();
    const upload = await a.store.createMultipartUpload(BUCKET, 'mp', { metadata: { user: {} }, checksum: null });
    await putPolicy(b, DENY_ALL);
    await expectDenied(await send(a, new UploadPartCommand({ Bucket: BUCKET, Key: 'mp', UploadId: upload.uploadId, PartNumber: 1, Body: 'part' })));
    expect((await a.store.listParts(BUCKET, 'mp', upload.uploadId, { partNumberMarker: 0, maxParts: 10 })).parts).toEqual([]);
    const { a: a2 } = await denied();
    await expectDenied(await send(a2, new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: 'mp2' })));
    expect(
      (await a2.store.listMultipartUploads(BUCKET, { maxUploads: 10, prefix: '', delimiter: null, keyMarker: null, uploadIdMarker: null })).uploads,
    ).toEqual([]);
  });

  it('PostObject: refused, nothing stored', async () => {
    const { a } = await denied();
    const encoded = Buffer.from(
      JSON.stringify({ expiration: new Date(Date.now() + 3600_000).toISOString(), conditions: [{ bucket: BUCKET }, { key: 'posted' }] }),
    ).toString('base64');
    const fd = new FormData();
    for (const [k, v] of Object.entries({
      key: 'posted',
      AWSAccessKeyId: ACCESS_KEY,
      policy: encoded,
      signature: createHmac('sha1', SECRET).update(encoded).digest('base64'),
    }))
      fd.append(k, v);
    fd.append('file', new Blob(['form data']), 'f.txt');
    await expectDenied(await a.send(new Request(`http://${GATE_HOST}/${BUCKET}`, { method: 'POST', body: fd })));
    expect(await exists(a, BUCKET, 'posted')).toBe(false);
  });
});

describe('a Deny removed in one isolate stops refusing in another at once', () => {
  it('the refusal of the stale view is confirmed against the stored policy', async () => {
    const { a, b } = await twoIsolates();
    await putPolicy(a, DENY_ALL);
    await expectDenied(await send(a, new GetObjectCommand({ Bucket: BUCKET, Key: 'obj' })));
    expect((await send(b, new DeleteBucketPolicyCommand({ Bucket: BUCKET }))).status).toBe(204);
    const calls = counted(a);
    const res = await send(a, new GetObjectCommand({ Bucket: BUCKET, Key: 'obj' }));
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('object body');
    expect(Object.fromEntries(calls)).toEqual({ getBucketSettings: 1, getVersion: 1 });
    // Seen now: the next request makes only its own call.
    calls.clear();
    expect((await send(a, new GetObjectCommand({ Bucket: BUCKET, Key: 'obj' }))).status).toBe(200);
    expect(Object.fromEntries(calls)).toEqual({ getVersion: 1 });
  });
});

describe('the catalog instance', () => {
  it('the stamp: empty without settings, one per content', () => {
    expect(settingsOf(() => null).stamp).toBe('');
    const one = settingsOf(() => DENY_ALL);
    expect(one.stamp).toMatch(/^[\w-]{22}$/);
    expect(settingsOf(() => DENY_ALL).stamp).toBe(one.stamp);
    expect(settingsOf(() => DENY_LOCKED).stamp).not.toBe(one.stamp);
    expect(settingsOf(() => DENY_ALL).rows.policy).toBe(DENY_ALL);
  });

  it('the stamp of a bucket with only a policy is the one stored before the public access block row existed', () => {
    // The previous code's stamp: the digest of [policy] (REQUEST_SETTINGS was ['policy']).
    const before = createHash('sha256')
      .update(JSON.stringify([DENY_ALL]))
      .digest('base64url')
      .slice(0, 22);
    expect(settingsOf((name) => (name === 'policy' ? DENY_ALL : null)).stamp).toBe(before);
    const both = settingsOf((name) => (name === 'policy' ? DENY_ALL : '{"restrictPublicBuckets":true}'));
    expect(both.stamp).not.toBe(before);
    expect(settingsOf((name) => (name === 'policy' ? null : '{"restrictPublicBuckets":true}')).stamp).toMatch(/^[\w-]{22}$/);
  });

  it('the stamp of a bucket without an owner row (every bucket stored before accounts) is the one stored before', () => {
    // The previous code's stamp: the digest of [policy, public-access-block, encryption].
    const rows: Record<string, string> = { policy: DENY_ALL, 'public-access-block': '{"restrictPublicBuckets":true}', encryption: '{"algorithm":"AES256"}' };
    const before = createHash('sha256')
      .update(JSON.stringify([rows.policy, rows['public-access-block'], rows.encryption]))
      .digest('base64url')
      .slice(0, 22);
    expect(settingsOf((name) => rows[name] ?? null).stamp).toBe(before);
    expect(settingsOf((name) => rows[name] ?? null).rows.owner).toBeNull();
    expect(settingsOf((name) => (name === 'owner' ? 'alt' : (rows[name] ?? null))).stamp).not.toBe(before);
  });

  it('a fenced call with a stale stamp does nothing and answers the settings; with the current one it acts', async () => {
    const { a } = await twoIsolates();
    await a.catalog.setBucketPolicy(BUCKET, DENY_LOCKED);
    const instance = a.catalog.namespace.instance(`bucket:${BUCKET}`).object;
    const stale = await instance.fenced('', 'removeManifest', [BUCKET, 'obj', undefined, 0]);
    const policyOnly = settingsOf((name) => (name === 'policy' ? DENY_LOCKED : null));
    expect(stale).toEqual({
      stale: { stamp: policyOnly.stamp, rows: { policy: DENY_LOCKED, 'public-access-block': null, encryption: null, owner: null, ownership: null, acl: null } },
    });
    expect(await exists(a, BUCKET, 'obj')).toBe(true);
    const ran = await instance.fenced(policyOnly.stamp, 'removeManifest', [BUCKET, 'obj', undefined, 0]);
    expect(ran.stale).toBeUndefined();
    expect(await exists(a, BUCKET, 'obj')).toBe(false);
    await expect(instance.fenced('', 'markMissing' as never, [])).rejects.toThrow(/not a request-path method/);
  });
});
