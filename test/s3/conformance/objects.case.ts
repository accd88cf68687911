/**
 * Conformance: PutObject, GetObject, HeadObject, DeleteObject, DeleteObjects, CopyObject,
 * metadata round-trip, awkward keys, presigned URLs, stream bodies.
 */
import {
  CopyObjectCommand,
  CreateBucketCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { Readable } from 'node:stream';
import { beforeAll, describe, expect, it } from 'vitest';
import { bucketName, bytesOf, expectS3Error, md5Hex, randomBytes, type ChecksumMode, type Suite } from './context.ts';

export function objectCases(suite: Suite, mode: ChecksumMode): void {
  describe('objects', () => {
    const bucket = () => bucketName(mode, 'objects');
    beforeAll(async () => {
      await suite().client.send(new CreateBucketCommand({ Bucket: bucket() }));
    });

    it('PutObject then GetObject returns the bytes, quoted MD5 ETag, Last-Modified, request id', async () => {
      const { client } = suite();
      const data = randomBytes(100_000, 7);
      const put = await client.send(new PutObjectCommand({ Bucket: bucket(), Key: 'plain.bin', Body: data }));
      expect(put.ETag).toBe(`"${md5Hex(data)}"`);
      expect(put.$metadata.requestId).toMatch(/^[0-9A-F]{16}$/);
      const got = await client.send(new GetObjectCommand({ Bucket: bucket(), Key: 'plain.bin' }));
      expect(got.ETag).toBe(put.ETag);
      expect(got.ContentLength).toBe(data.length);
      expect(got.LastModified).toBeInstanceOf(Date);
      expect(Math.abs(got.LastModified!.getTime() - Date.now())).toBeLessThan(10 * 60_000);
      expect(got.AcceptRanges).toBe('bytes');
      expect(Buffer.from(await bytesOf(got.Body)).equals(Buffer.from(data))).toBe(true);
    });

    it('an empty object round-trips', async () => {
      const { client } = suite();
      const put = await client.send(new PutObjectCommand({ Bucket: bucket(), Key: 'empty', Body: new Uint8Array(0) }));
      expect(put.ETag).toBe('"d41d8cd98f00b204e9800998ecf8427e"');
      const got = await client.send(new GetObjectCommand({ Bucket: bucket(), Key: 'empty' }));
      expect(got.ContentLength).toBe(0);
      expect((await bytesOf(got.Body)).length).toBe(0);
    });

    it('metadata round-trips on GET and HEAD', async () => {
      const { client } = suite();
      const expires = new Date('2030-01-02T03:04:05Z');
      await client.send(
        new PutObjectCommand({
          Bucket: bucket(),
          Key: 'meta.txt',
          Body: 'hello metadata',
          ContentType: 'text/plain; charset=utf-8',
          ContentDisposition: 'attachment; filename="x.txt"',
          ContentLanguage: 'fr-CA',
          CacheControl: 'max-age=60',
          Expires: expires,
          Metadata: { colour: 'blue', 'two-words': 'a b' },
        }),
      );
      for (const cmd of [new HeadObjectCommand({ Bucket: bucket(), Key: 'meta.txt' }), new GetObjectCommand({ Bucket: bucket(), Key: 'meta.txt' })]) {
        const r = await client.send(cmd as GetObjectCommand);
        expect(r.ContentType).toBe('text/plain; charset=utf-8');
        expect(r.ContentDisposition).toBe('attachment; filename="x.txt"');
        expect(r.ContentLanguage).toBe('fr-CA');
        expect(r.CacheControl).toBe('max-age=60');
        expect(r.Expires?.getTime()).toBe(expires.getTime());
        expect(r.Metadata).toEqual({ colour: 'blue', 'two-words': 'a b' });
        expect(r.ContentLength).toBe(14);
      }
    });

    it('a stored Content-Encoding is returned and the bytes are untouched', async () => {
      const { client } = suite();
      const data = randomBytes(5000, 3);
      await client.send(new PutObjectCommand({ Bucket: bucket(), Key: 'encoded.gz', Body: data, ContentEncoding: 'gzip', ContentType: 'text/plain' }));
      const got = await client.send(new GetObjectCommand({ Bucket: bucket(), Key: 'encoded.gz' }));
      expect(got.ContentEncoding).toBe('gzip');
      expect(Buffer.from(await bytesOf(got.Body)).equals(Buffer.from(data))).toBe(true);
    });

    it('HeadObject returns size and ETag without a body; missing key is 404 NotFound', async () => {
      const { client } = suite();
      await client.send(new PutObjectCommand({ Bucket: bucket(), Key: 'head-me', Body: 'twelve bytes' }));
      const head = await client.send(new HeadObjectCommand({ Bucket: bucket(), Key: 'head-me' }));
      expect(head.ContentLength).toBe(12);
      expect(head.ETag).toBe(`"${md5Hex('twelve bytes')}"`);
      await expectS3Error(client.send(new HeadObjectCommand({ Bucket: bucket(), Key: 'absent' })), 'NotFound', 404);
    });

    it('GetObject errors: NoSuchKey, NoSuchBucket', async () => {
      const { client } = suite();
      const err = await expectS3Error(client.send(new GetObjectCommand({ Bucket: bucket(), Key: 'absent' })), 'NoSuchKey', 404);
      expect(err.$metadata?.requestId).toMatch(/^[0-9A-F]{16}$/);
      await expectS3Error(client.send(new GetObjectCommand({ Bucket: 'no-such-bucket-here', Key: 'k' })), 'NoSuchBucket', 404);
      await expectS3Error(client.send(new PutObjectCommand({ Bucket: 'no-such-bucket-here', Key: 'k', Body: 'x' })), 'NoSuchBucket', 404);
    });

    it('keys with spaces, +, %, unicode, // and leading / round-trip and list exactly', async () => {
      const { client } = suite();
      const keys = ['a b', 'a+b', '100%', '%2F', 'é/ü/日本語', '😀 emoji', 'a//b', '/leading', 'trailing/', 'q?x=1&y#z', 'quote\'"<>', '~!@$^*()[]{}|;:,'];
      for (const key of keys) await client.send(new PutObjectCommand({ Bucket: bucket(), Key: key, Body: key }));
      for (const key of keys) {
        const got = await client.send(new GetObjectCommand({ Bucket: bucket(), Key: key }));
        expect(await got.Body!.transformToString()).toBe(key);
      }
      const listed = await client.send(new ListObjectsV2Command({ Bucket: bucket() }));
      const names = listed.Contents!.map((c) => c.Key);
      for (const key of keys) expect(names).toContain(key);
    });

    it('DeleteObject is 204, also for a missing key', async () => {
      const { client } = suite();
      await client.send(new PutObjectCommand({ Bucket: bucket(), Key: 'doomed', Body: 'x' }));
      expect((await client.send(new DeleteObjectCommand({ Bucket: bucket(), Key: 'doomed' }))).$metadata.httpStatusCode).toBe(204);
      expect((await client.send(new DeleteObjectCommand({ Bucket: bucket(), Key: 'doomed' }))).$metadata.httpStatusCode).toBe(204);
      await expectS3Error(client.send(new HeadObjectCommand({ Bucket: bucket(), Key: 'doomed' })), 'NotFound', 404);
    });

    it('DeleteObject with If-Match deletes only the matching object', async () => {
      const { client } = suite();
      const put = await client.send(new PutObjectCommand({ Bucket: bucket(), Key: 'cond-del', Body: 'x' }));
      await expectS3Error(client.send(new DeleteObjectCommand({ Bucket: bucket(), Key: 'cond-del', IfMatch: '"0000"' })), 'PreconditionFailed', 412);
      await client.send(new DeleteObjectCommand({ Bucket: bucket(), Key: 'cond-del', IfMatch: put.ETag }));
      await expectS3Error(client.send(new HeadObjectCommand({ Bucket: bucket(), Key: 'cond-del' })), 'NotFound', 404);
    });

    it('DeleteObjects deletes many (missing keys count as deleted), Quiet lists nothing', async () => {
      const { client } = suite();
      for (const k of ['d1', 'd2', 'sp ace']) await client.send(new PutObjectCommand({ Bucket: bucket(), Key: k, Body: k }));
      const res = await client.send(
        new DeleteObjectsCommand({ Bucket: bucket(), Delete: { Objects: [{ Key: 'd1' }, { Key: 'sp ace' }, { Key: 'never-was' }] } }),
      );
      expect(res.Deleted?.map((d) => d.Key).sort()).toEqual(['d1', 'never-was', 'sp ace']);
      expect(res.Errors ?? []).toEqual([]);
      const quiet = await client.send(new DeleteObjectsCommand({ Bucket: bucket(), Delete: { Objects: [{ Key: 'd2' }], Quiet: true } }));
      expect(quiet.Deleted ?? []).toEqual([]);
      for (const k of ['d1', 'd2', 'sp ace']) await expectS3Error(client.send(new HeadObjectCommand({ Bucket: bucket(), Key: k })), 'NotFound', 404);
    });

    it('CopyObject copies data and metadata (COPY) or replaces metadata (REPLACE)', async () => {
      const { client } = suite();
      const put = await client.send(
        new PutObjectCommand({ Bucket: bucket(), Key: 'src file', Body: 'copy me', ContentType: 'text/x-src', Metadata: { origin: 'src' } }),
      );
      const source = `${bucket()}/${encodeURIComponent('src file')}`;
      const copied = await client.send(new CopyObjectCommand({ Bucket: bucket(), Key: 'dst/é', CopySource: source }));
      expect(copied.CopyObjectResult?.ETag).toBe(put.ETag);
      const a = await client.send(new GetObjectCommand({ Bucket: bucket(), Key: 'dst/é' }));
      expect(await a.Body!.transformToString()).toBe('copy me');
      expect(a.ContentType).toBe('text/x-src');
      expect(a.Metadata).toEqual({ origin: 'src' });
      await client.send(
        new CopyObjectCommand({
          Bucket: bucket(),
          Key: 'dst2',
          CopySource: source,
          MetadataDirective: 'REPLACE',
          ContentType: 'text/x-new',
          Metadata: { origin: 'new' },
        }),
      );
      const b = await client.send(new HeadObjectCommand({ Bucket: bucket(), Key: 'dst2' }));
      expect(b.ContentType).toBe('text/x-new');
      expect(b.Metadata).toEqual({ origin: 'new' });
    });

    it('CopyObject errors: onto itself without REPLACE, missing source, failed copy-source condition', async () => {
      const { client } = suite();
      await client.send(new PutObjectCommand({ Bucket: bucket(), Key: 'self', Body: 'x' }));
      await expectS3Error(client.send(new CopyObjectCommand({ Bucket: bucket(), Key: 'self', CopySource: `${bucket()}/self` })), 'InvalidRequest', 400);
      await client.send(
        new CopyObjectCommand({ Bucket: bucket(), Key: 'self', CopySource: `${bucket()}/self`, MetadataDirective: 'REPLACE', Metadata: { touched: 'yes' } }),
      );
      expect((await client.send(new HeadObjectCommand({ Bucket: bucket(), Key: 'self' }))).Metadata).toEqual({ touched: 'yes' });
      await expectS3Error(client.send(new CopyObjectCommand({ Bucket: bucket(), Key: 'x', CopySource: `${bucket()}/absent` })), 'NoSuchKey', 404);
      await expectS3Error(
        client.send(new CopyObjectCommand({ Bucket: bucket(), Key: 'x', CopySource: `${bucket()}/self`, CopySourceIfMatch: '"nope"' })),
        'PreconditionFailed',
        412,
      );
      await expectS3Error(
        client.send(new CopyObjectCommand({ Bucket: bucket(), Key: 'x', CopySource: `${bucket()}/self`, CopySourceIfNoneMatch: '*' })),
        'PreconditionFailed',
        412,
      );
    });

    it('a query parameter that is not S3 API (a cache buster) is ignored, as S3 ignores it; an S3 one the operation does not take is 501', async () => {
      const { client } = suite();
      const withQuery = <C extends { middlewareStack: { add(m: unknown, o: object): void } }>(command: C, query: Record<string, string>): C => {
        command.middlewareStack.add(
          (next: (a: { request: { query: Record<string, string> } }) => unknown) => (args: { request: { query: Record<string, string> } }) => {
            Object.assign(args.request.query, query);
            return next(args);
          },
          { step: 'build' }, // before signing: the parameter is signed as a client adding it would
        );
        return command;
      };
      await client.send(withQuery(new PutObjectCommand({ Bucket: bucket(), Key: 'busted', Body: 'cached body' }), { utm_source: 'page' }));
      const got = await client.send(withQuery(new GetObjectCommand({ Bucket: bucket(), Key: 'busted' }), { v: '3' }));
      expect(await got.Body!.transformToString()).toBe('cached body');
      await expectS3Error(client.send(withQuery(new GetObjectCommand({ Bucket: bucket(), Key: 'busted' }), { uploads: '' })), 'NotImplemented', 501);
    });

    it('presigned GET and PUT URLs work (signatures checked only by the real gate)', async () => {
      const { client } = suite();
      await client.send(new PutObjectCommand({ Bucket: bucket(), Key: 'signed key', Body: 'presigned body' }));
      const getUrl = await getSignedUrl(client, new GetObjectCommand({ Bucket: bucket(), Key: 'signed key' }), { expiresIn: 300 });
      expect(getUrl).toContain('X-Amz-Signature=');
      const res = await fetch(getUrl, { headers: { 'accept-encoding': 'identity' } });
      expect(res.status).toBe(200);
      expect(await res.text()).toBe('presigned body');
      const putCommand = new PutObjectCommand({ Bucket: bucket(), Key: 'signed put', Metadata: { via: 'presigned' } });
      const putUrl = await getSignedUrl(client, putCommand, { expiresIn: 300 });
      expect(putUrl).toContain('x-amz-meta-via=presigned'); // hoisted into the query: must be applied as a header
      const put = await fetch(putUrl, { method: 'PUT', body: 'uploaded via url' });
      expect(put.status).toBe(200);
      const got = await client.send(new GetObjectCommand({ Bucket: bucket(), Key: 'signed put' }));
      expect(await got.Body!.transformToString()).toBe('uploaded via url');
      expect(got.Metadata).toEqual({ via: 'presigned' });
    });
  });
}

/** Stream bodies: sent plain with WHEN_REQUIRED; aws-chunked with SDK defaults. */
export function streamCases(suite: Suite, mode: ChecksumMode): void {
  describe('stream bodies', () => {
    const bucket = () => bucketName(mode, 'objects');
    it('PutObject with a stream body', async () => {
      const { client } = suite();
      const data = randomBytes(300_000, 11);
      const body = Readable.from([data.subarray(0, 100_000), data.subarray(100_000)]);
      const put = await client.send(new PutObjectCommand({ Bucket: bucket(), Key: 'streamed', Body: body, ContentLength: data.length }));
      expect(put.ETag).toBe(`"${md5Hex(data)}"`);
      const got = await client.send(new GetObjectCommand({ Bucket: bucket(), Key: 'streamed' }));
      expect(Buffer.from(await bytesOf(got.Body)).equals(Buffer.from(data))).toBe(true);
    });
  });
}
