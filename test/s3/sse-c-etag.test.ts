/**
 * SSE-C objects and their ETag (issue 37): the review found that an SSE-C object's ETag was the
 * MD5 of its plaintext, shown to keys that never had the customer key (listings, and conditional
 * requests, which were evaluated before the key was checked: a keyless If-None-Match told a right
 * guess, 304, from a wrong one). Now the key is checked first, and the ETag of an SSE-C object
 * (single PUT, copy, parts and the multipart whole) is opaque: not the MD5, stable, usable in
 * conditions by whoever has the key. Through the real gate and front door (gate-app.ts), signed by
 * @aws-sdk/client-s3.
 */
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { gateApp } from '../support/gate-app.ts';
import { sdk } from '../auth/mutation/bases.ts';
import { toRequest } from '../auth/mutation/wire.ts';

const B = 'vault';
const KEY = Buffer.alloc(32, 7);
const OTHER = Buffer.alloc(32, 9);
const sseC = (key: Buffer) => ({
  SSECustomerAlgorithm: 'AES256',
  SSECustomerKey: key.toString('base64'),
  SSECustomerKeyMD5: createHash('md5').update(key).digest('base64'),
});
const md5 = (b: string | Uint8Array) => createHash('md5').update(b).digest('hex');
const BODY = 'the secret contents, guessable';

async function setup() {
  const g = gateApp();
  await g.store.createBucket(B, { region: 'us-east-1' });
  const send = async (command: unknown) => {
    const plain = toRequest(await sdk(command, {}))!;
    // Over TLS, as an SSE-C key must travel (sse-transport.ts): the scheme is not signed.
    const res = await g.send(new Request(plain.url.replace(/^http:/, 'https:'), plain));
    const text = res.status === 304 || command instanceof HeadObjectCommand ? '' : await res.text();
    return { status: res.status, etag: res.headers.get('etag'), code: /<Code>([^<]+)<\/Code>/.exec(text)?.[1], text };
  };
  return { g, send };
}

describe('SSE-C ETags', () => {
  it('a PUT shows an opaque ETag, the same in HEAD and listings; keyless conditions are refused before they are evaluated', async () => {
    const { send } = await setup();
    const put = await send(new PutObjectCommand({ Bucket: B, Key: 's', Body: BODY, ...sseC(KEY) }));
    expect(put.status).toBe(200);
    expect(put.etag).toMatch(/^"[0-9a-f]{32}"$/);
    expect(put.etag).not.toBe(`"${md5(BODY)}"`);
    expect((await send(new HeadObjectCommand({ Bucket: B, Key: 's', ...sseC(KEY) }))).etag).toBe(put.etag);
    expect((await send(new ListObjectsV2Command({ Bucket: B }))).text).toContain(`<ETag>${put.etag!.replace(/"/g, '&quot;')}</ETag>`);
    // Without the key, a right and a wrong guess get the same answer: the key is asked for first.
    for (const guess of [`"${md5(BODY)}"`, put.etag!, '"00000000000000000000000000000000"']) {
      expect((await send(new HeadObjectCommand({ Bucket: B, Key: 's', IfNoneMatch: guess }))).status, guess).toBe(400);
      expect((await send(new GetObjectCommand({ Bucket: B, Key: 's', IfMatch: guess }))).code, guess).toBe('InvalidRequest');
      expect((await send(new GetObjectCommand({ Bucket: B, Key: 's', IfMatch: guess, ...sseC(OTHER) }))).code, guess).toBe('AccessDenied');
    }
    // With the key, conditions work on the ETag the client was given.
    expect((await send(new GetObjectCommand({ Bucket: B, Key: 's', IfNoneMatch: put.etag!, ...sseC(KEY) }))).status).toBe(304);
    const got = await send(new GetObjectCommand({ Bucket: B, Key: 's', IfMatch: put.etag!, ...sseC(KEY) }));
    expect([got.status, got.text]).toEqual([200, BODY]);
    // The same contents under another key (or none) show another ETag: nothing to compare across objects.
    const again = await send(new PutObjectCommand({ Bucket: B, Key: 't', Body: BODY, ...sseC(OTHER) }));
    expect(again.etag).not.toBe(put.etag);
    expect((await send(new PutObjectCommand({ Bucket: B, Key: 'plain', Body: BODY }))).etag).toBe(`"${md5(BODY)}"`);
  });

  it('a copy to SSE-C and a multipart SSE-C upload show opaque ETags too', async () => {
    const { send } = await setup();
    await send(new PutObjectCommand({ Bucket: B, Key: 'plain', Body: BODY }));
    const copy = await send(new CopyObjectCommand({ Bucket: B, Key: 'copy', CopySource: `${B}/plain`, ...sseC(KEY) }));
    expect([copy.status, copy.text]).toEqual([200, expect.anything()]);
    expect(copy.text).not.toContain(md5(BODY));
    // One part (this gateway's test limits make any part the last): its ETag and the whole's are opaque.
    const part = 'p'.repeat(100_000);
    const { text } = await send(new CreateMultipartUploadCommand({ Bucket: B, Key: 'mpu', ...sseC(KEY) }));
    const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(text)![1]!;
    const p1 = await send(new UploadPartCommand({ Bucket: B, Key: 'mpu', UploadId: uploadId, PartNumber: 1, Body: part, ...sseC(KEY) }));
    expect(p1.status).toBe(200);
    expect(p1.etag).toMatch(/^"[0-9a-f]{32}"$/);
    expect(p1.etag).not.toBe(`"${md5(part)}"`);
    const done = await send(
      new CompleteMultipartUploadCommand({
        Bucket: B,
        Key: 'mpu',
        UploadId: uploadId,
        MultipartUpload: { Parts: [{ PartNumber: 1, ETag: p1.etag! }] },
        ...sseC(KEY),
      }),
    );
    expect([done.status, done.text]).toEqual([200, expect.anything()]);
    expect(done.text).not.toContain(md5(Buffer.from(md5(part), 'hex')));
    expect((await send(new HeadObjectCommand({ Bucket: B, Key: 'mpu', ...sseC(KEY) }))).etag).toMatch(/^"[0-9a-f]{32}-1"$/);
  });
});
