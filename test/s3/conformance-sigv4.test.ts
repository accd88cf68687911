/**
 * The same conformance suite with the REAL gate (fixtures/worker-sigv4.ts: worker/app/auth-gate.ts,
 * SigV4 header + presigned, aws-chunked), so SDK-default stream uploads (aws-chunked with a CRC32
 * trailer) run too; plus what only a verifying gate can answer: wrong keys, tampered URLs.
 */
import { CreateBucketCommand, GetObjectCommand, HeadObjectCommand, ListBucketsCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { beforeAll, describe, expect, it } from 'vitest';
import { conformanceSuite } from './conformance.case.ts';
import { expectS3Error } from './conformance/context.ts';
import { s3Client } from './harness.ts';
import { raw, rawSocket } from './raw-http.ts';

const { worker } = conformanceSuite('sigv4');

describe('only a verifying gate', () => {
  beforeAll(async () => {
    await s3Client(worker().url).send(new CreateBucketCommand({ Bucket: 'gate-only' }));
  });

  it('a wrong secret is SignatureDoesNotMatch, an unknown key InvalidAccessKeyId', async () => {
    const url = worker().url;
    const wrongSecret = s3Client(url, { credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'not-the-secret' } });
    await expectS3Error(wrongSecret.send(new ListBucketsCommand({})), 'SignatureDoesNotMatch', 403);
    const unknown = s3Client(url, { credentials: { accessKeyId: 'AKIDUNKNOWN', secretAccessKey: 'x' } });
    await expectS3Error(unknown.send(new ListBucketsCommand({})), 'InvalidAccessKeyId', 403);
  });

  it('a tampered presigned URL is refused; the untampered one works', async () => {
    const client = s3Client(worker().url);
    await client.send(new PutObjectCommand({ Bucket: 'gate-only', Key: 'presign-target', Body: 'secret' }));
    const signed = await getSignedUrl(client, new GetObjectCommand({ Bucket: 'gate-only', Key: 'presign-target' }), { expiresIn: 60 });
    expect(await (await fetch(signed, { headers: { 'accept-encoding': 'identity' } })).text()).toBe('secret');
    const tampered = signed.replace('presign-target', 'presign-targeT');
    const res = await fetch(tampered, { headers: { 'accept-encoding': 'identity' } });
    expect(res.status).toBe(403);
    expect(await res.text()).toContain('<Code>SignatureDoesNotMatch</Code>');
  });

  it('a key with a plain `..` segment is refused, never silently renamed', async () => {
    // The SDK sends /bucket/dots/../renamed as is; workerd resolves dot segments before the worker
    // runs, so the path the gate sees is not the one that was signed.
    // Empty bodies: a refused request whose body the gate left unread wedges wrangler dev's proxy.
    const client = s3Client(worker().url);
    await expectS3Error(client.send(new PutObjectCommand({ Bucket: 'gate-only', Key: 'dots/../renamed', Body: '' })), 'SignatureDoesNotMatch', 403);
    await expectS3Error(client.send(new GetObjectCommand({ Bucket: 'gate-only', Key: 'dots/../renamed' })), 'SignatureDoesNotMatch', 403);
    await expectS3Error(client.send(new HeadObjectCommand({ Bucket: 'gate-only', Key: 'renamed' })), 'NotFound', 404);
  });

  it('an expired presigned PUT is AccessDenied at once, its body not read (Expect: 100-continue)', async () => {
    // Before: the gateway drained the body of the refused request, and the client, waiting for
    // 100 Continue that workerd never sends, waited with it (for ever, with this socket).
    const url = worker().url;
    const client = s3Client(url);
    const expired = new URL(
      await getSignedUrl(client, new PutObjectCommand({ Bucket: 'gate-only', Key: 'late' }), {
        expiresIn: 1,
        signingDate: new Date(Date.now() - 3600e3),
      } as never),
    );
    const head = `PUT ${expired.pathname}${expired.search} HTTP/1.1\r\nHost: ${url.host}\r\nExpect: 100-continue\r\nContent-Length: 100000\r\nConnection: close\r\n\r\n`;
    const res = await Promise.race([
      rawSocket(url, head),
      new Promise<{ status: number; response: string }>((r) => setTimeout(() => r({ status: 0, response: 'no answer in 5 s' }), 5000)),
    ]);
    expect(res.status, res.response).toBe(403);
    expect(res.response).toContain('<Code>AccessDenied</Code>');
    // The gateway is still answering.
    expect((await raw(url, { path: '/gate-only/late' })).status).toBe(403);
  });
});
