/**
 * The same conformance suite with the REAL gate (fixtures/worker-sigv4.ts: worker/auth-gate.ts,
 * SigV4 header + presigned, aws-chunked), so SDK-default stream uploads (aws-chunked with a CRC32
 * trailer) run too; plus what only a verifying gate can answer: wrong keys, tampered URLs.
 */
import { CreateBucketCommand, GetObjectCommand, HeadObjectCommand, ListBucketsCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { beforeAll, describe, expect, it } from 'vitest';
import { conformanceSuite } from './conformance.case.ts';
import { expectS3Error } from './conformance/context.ts';
import { s3Client } from './harness.ts';

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
});
