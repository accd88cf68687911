/**
 * Conformance: CreateMultipartUpload, UploadPart, UploadPartCopy, CompleteMultipartUpload,
 * AbortMultipartUpload, ListParts, ListMultipartUploads, lib-storage Upload, part rules and
 * COMPOSITE / FULL_OBJECT checksums.
 */
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  ListMultipartUploadsCommand,
  ListPartsCommand,
  PutObjectCommand,
  UploadPartCommand,
  UploadPartCopyCommand,
  type CompletedPart,
  type S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { createHash } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { bucketName, bytesOf, crc32B64, expectS3Error, md5Hex, randomBytes, type ChecksumMode, type Suite } from './context.ts';

const MiB = 1024 * 1024;

function multipartEtag(parts: Uint8Array[]): string {
  const md5s = parts.map((p) => createHash('md5').update(p).digest());
  return `"${createHash('md5').update(Buffer.concat(md5s)).digest('hex')}-${parts.length}"`;
}

async function uploadParts(client: S3Client, bucket: string, key: string, uploadId: string, parts: Uint8Array[], extra: object = {}): Promise<CompletedPart[]> {
  const done: CompletedPart[] = [];
  for (const [i, body] of parts.entries()) {
    const r = await client.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId: uploadId, PartNumber: i + 1, Body: body, ...extra }));
    done.push({ PartNumber: i + 1, ETag: r.ETag, ChecksumCRC32: r.ChecksumCRC32 });
  }
  return done;
}

export function multipartCases(suite: Suite, mode: ChecksumMode): void {
  const bucket = bucketName(mode, 'multipart');
  const big = randomBytes(5 * MiB + 1234, 21);
  const tail = randomBytes(4321, 22);

  describe('multipart', () => {
    const client = () => suite().client;
    const create = async (key: string, extra: object = {}) =>
      (await client().send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key, ...extra }))).UploadId!;

    beforeAll(async () => {
      await client().send(new CreateBucketCommand({ Bucket: bucket }));
    });

    it('create, upload, list, complete: ETag md5-of-md5s-N and the bytes', async () => {
      const id = await create('mp/basic', { ContentType: 'application/x-test', Metadata: { kind: 'mpu' } });
      const parts = await uploadParts(client(), bucket, 'mp/basic', id, [big, tail]);
      expect(parts[0].ETag).toBe(`"${md5Hex(big)}"`);
      const listed = await client().send(new ListPartsCommand({ Bucket: bucket, Key: 'mp/basic', UploadId: id }));
      expect(listed.Parts?.map((p) => [p.PartNumber, p.Size, p.ETag])).toEqual([
        [1, big.length, parts[0].ETag],
        [2, tail.length, parts[1].ETag],
      ]);
      const done = await client().send(
        new CompleteMultipartUploadCommand({ Bucket: bucket, Key: 'mp/basic', UploadId: id, MultipartUpload: { Parts: parts } }),
      );
      expect(done.ETag).toBe(multipartEtag([big, tail]));
      expect(done.Key).toBe('mp/basic');
      const got = await client().send(new GetObjectCommand({ Bucket: bucket, Key: 'mp/basic' }));
      expect(got.ContentType).toBe('application/x-test');
      expect(got.Metadata).toEqual({ kind: 'mpu' });
      expect(Buffer.from(await bytesOf(got.Body)).equals(Buffer.concat([big, tail]))).toBe(true);
      const across = await client().send(new GetObjectCommand({ Bucket: bucket, Key: 'mp/basic', Range: `bytes=${big.length - 2}-${big.length + 1}` }));
      expect(Buffer.from(await bytesOf(across.Body)).equals(Buffer.concat([big.subarray(-2), tail.subarray(0, 2)]))).toBe(true);
      await expectS3Error(client().send(new ListPartsCommand({ Bucket: bucket, Key: 'mp/basic', UploadId: id })), 'NoSuchUpload', 404);
    });

    it('lib-storage Upload of ~12 MiB', async () => {
      const body = randomBytes(12 * MiB + 77, 23);
      const upload = new Upload({ client: client(), params: { Bucket: bucket, Key: 'mp/lib-storage.bin', Body: body }, partSize: 5 * MiB, queueSize: 2 });
      const result = await upload.done();
      expect(result.ETag).toMatch(/-3"$/);
      const got = await client().send(new GetObjectCommand({ Bucket: bucket, Key: 'mp/lib-storage.bin' }));
      expect(got.ContentLength).toBe(body.length);
      expect(md5Hex(await bytesOf(got.Body))).toBe(md5Hex(body));
    });

    it('part rules: EntityTooSmall, InvalidPart, InvalidPartOrder, part number range', async () => {
      const id = await create('mp/rules');
      const small = await uploadParts(client(), bucket, 'mp/rules', id, [tail, tail]);
      const complete = (parts: CompletedPart[]) =>
        client().send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: 'mp/rules', UploadId: id, MultipartUpload: { Parts: parts } }));
      await expectS3Error(complete(small), 'EntityTooSmall', 400);
      await expectS3Error(complete([{ PartNumber: 1, ETag: '"00000000000000000000000000000000"' }]), 'InvalidPart', 400);
      await expectS3Error(complete([{ PartNumber: 3, ETag: small[0].ETag }]), 'InvalidPart', 400);
      await expectS3Error(complete([small[1], small[0]]), 'InvalidPartOrder', 400);
      for (const n of [0, 10001]) {
        await expectS3Error(
          client().send(new UploadPartCommand({ Bucket: bucket, Key: 'mp/rules', UploadId: id, PartNumber: n, Body: tail })),
          'InvalidArgument',
          400,
        );
      }
      const single = await complete([small[0]]);
      expect(single.ETag).toBe(multipartEtag([tail]));
    });

    it('NoSuchUpload for unknown upload ids; Abort removes an upload', async () => {
      await expectS3Error(client().send(new UploadPartCommand({ Bucket: bucket, Key: 'k', UploadId: 'nope', PartNumber: 1, Body: tail })), 'NoSuchUpload', 404);
      await expectS3Error(
        client().send(
          new CompleteMultipartUploadCommand({ Bucket: bucket, Key: 'k', UploadId: 'nope', MultipartUpload: { Parts: [{ PartNumber: 1, ETag: '"x"' }] } }),
        ),
        'NoSuchUpload',
        404,
      );
      await expectS3Error(client().send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: 'k', UploadId: 'nope' })), 'NoSuchUpload', 404);
      const id = await create('mp/aborted');
      await uploadParts(client(), bucket, 'mp/aborted', id, [tail]);
      const aborted = await client().send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: 'mp/aborted', UploadId: id }));
      expect(aborted.$metadata.httpStatusCode).toBe(204);
      await expectS3Error(client().send(new ListPartsCommand({ Bucket: bucket, Key: 'mp/aborted', UploadId: id })), 'NoSuchUpload', 404);
    });

    it('ListParts pages with max-parts and part-number-marker', async () => {
      const id = await create('mp/paged');
      await uploadParts(client(), bucket, 'mp/paged', id, [tail, tail, tail]);
      const first = await client().send(new ListPartsCommand({ Bucket: bucket, Key: 'mp/paged', UploadId: id, MaxParts: 2 }));
      expect(first.Parts?.map((p) => p.PartNumber)).toEqual([1, 2]);
      expect(first.IsTruncated).toBe(true);
      expect(first.NextPartNumberMarker).toBe('2');
      const second = await client().send(
        new ListPartsCommand({ Bucket: bucket, Key: 'mp/paged', UploadId: id, MaxParts: 2, PartNumberMarker: first.NextPartNumberMarker }),
      );
      expect(second.Parts?.map((p) => p.PartNumber)).toEqual([3]);
      expect(second.IsTruncated).toBe(false);
      await client().send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: 'mp/paged', UploadId: id }));
    });

    it('ListMultipartUploads: prefix, delimiter, paging', async () => {
      const b = bucketName(mode, 'uploads-list');
      await client().send(new CreateBucketCommand({ Bucket: b }));
      const ids: Record<string, string> = {};
      for (const key of ['u/a', 'u/b', 'u/dir/c', 'v']) ids[key] = (await client().send(new CreateMultipartUploadCommand({ Bucket: b, Key: key }))).UploadId!;
      const all = await client().send(new ListMultipartUploadsCommand({ Bucket: b }));
      expect(all.Uploads?.map((u) => [u.Key, u.UploadId])).toEqual(Object.entries(ids));
      const grouped = await client().send(new ListMultipartUploadsCommand({ Bucket: b, Prefix: 'u/', Delimiter: '/' }));
      expect(grouped.Uploads?.map((u) => u.Key)).toEqual(['u/a', 'u/b']);
      expect(grouped.CommonPrefixes?.map((p) => p.Prefix)).toEqual(['u/dir/']);
      const seen: string[] = [];
      let keyMarker: string | undefined;
      let uploadIdMarker: string | undefined;
      for (let i = 0; i < 10; i++) {
        const page = await client().send(new ListMultipartUploadsCommand({ Bucket: b, MaxUploads: 1, KeyMarker: keyMarker, UploadIdMarker: uploadIdMarker }));
        expect(page.Uploads?.length ?? 0).toBeLessThanOrEqual(1);
        seen.push(...(page.Uploads ?? []).map((u) => u.Key!));
        if (!page.IsTruncated) break;
        keyMarker = page.NextKeyMarker;
        uploadIdMarker = page.NextUploadIdMarker;
      }
      expect(seen).toEqual(['u/a', 'u/b', 'u/dir/c', 'v']);
    });

    it('UploadPartCopy copies whole objects and byte ranges into parts', async () => {
      await client().send(new PutObjectCommand({ Bucket: bucket, Key: 'mp/copy source', Body: big }));
      const id = await create('mp/copied');
      const source = `${bucket}/${encodeURIComponent('mp/copy source')}`;
      const p1 = await client().send(new UploadPartCopyCommand({ Bucket: bucket, Key: 'mp/copied', UploadId: id, PartNumber: 1, CopySource: source }));
      const p2 = await client().send(
        new UploadPartCopyCommand({ Bucket: bucket, Key: 'mp/copied', UploadId: id, PartNumber: 2, CopySource: source, CopySourceRange: 'bytes=10-109' }),
      );
      expect(p1.CopyPartResult?.ETag).toBe(`"${md5Hex(big)}"`);
      await expectS3Error(
        client().send(
          new UploadPartCopyCommand({
            Bucket: bucket,
            Key: 'mp/copied',
            UploadId: id,
            PartNumber: 3,
            CopySource: source,
            CopySourceRange: `bytes=0-${big.length}`,
          }),
        ),
        'InvalidRange',
        416,
      );
      const parts = [
        { PartNumber: 1, ETag: p1.CopyPartResult?.ETag },
        { PartNumber: 2, ETag: p2.CopyPartResult?.ETag },
      ];
      await client().send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: 'mp/copied', UploadId: id, MultipartUpload: { Parts: parts } }));
      const got = await client().send(new GetObjectCommand({ Bucket: bucket, Key: 'mp/copied' }));
      expect(Buffer.from(await bytesOf(got.Body)).equals(Buffer.concat([big, big.subarray(10, 110)]))).toBe(true);
    });

    it('conditional CompleteMultipartUpload: If-None-Match * fails on an existing key', async () => {
      await client().send(new PutObjectCommand({ Bucket: bucket, Key: 'mp/exists', Body: 'old' }));
      const id = await create('mp/exists');
      const parts = await uploadParts(client(), bucket, 'mp/exists', id, [tail]);
      const cmd = new CompleteMultipartUploadCommand({ Bucket: bucket, Key: 'mp/exists', UploadId: id, IfNoneMatch: '*', MultipartUpload: { Parts: parts } });
      await expectS3Error(client().send(cmd), 'PreconditionFailed', 412);
      const old = await client().send(new GetObjectCommand({ Bucket: bucket, Key: 'mp/exists' }));
      expect(await old.Body!.transformToString()).toBe('old');
      const ok = new CompleteMultipartUploadCommand({ Bucket: bucket, Key: 'mp/exists', UploadId: id, IfMatch: old.ETag, MultipartUpload: { Parts: parts } });
      expect((await client().send(ok)).ETag).toBe(multipartEtag([tail]));
    });

    it('COMPOSITE CRC32 checksum: crc32(part crcs)-N', async () => {
      const id = await create('mp/composite', { ChecksumAlgorithm: 'CRC32' });
      const parts = await uploadParts(client(), bucket, 'mp/composite', id, [big, tail], { ChecksumAlgorithm: 'CRC32' });
      expect(parts.map((p) => p.ChecksumCRC32)).toEqual([crc32B64(big), crc32B64(tail)]);
      const done = await client().send(
        new CompleteMultipartUploadCommand({ Bucket: bucket, Key: 'mp/composite', UploadId: id, MultipartUpload: { Parts: parts } }),
      );
      const expected = `${crc32B64(Buffer.concat(parts.map((p) => Buffer.from(p.ChecksumCRC32!, 'base64'))))}-2`;
      expect(done.ChecksumCRC32).toBe(expected);
      expect(done.ChecksumType).toBe('COMPOSITE');
      const got = await client().send(new GetObjectCommand({ Bucket: bucket, Key: 'mp/composite', ChecksumMode: 'ENABLED' }));
      expect(got.ChecksumCRC32).toBe(expected);
      expect(got.ChecksumType).toBe('COMPOSITE');
      await bytesOf(got.Body);
    });

    it('FULL_OBJECT CRC32 checksum equals the CRC32 of the whole object', async () => {
      const id = await create('mp/full', { ChecksumAlgorithm: 'CRC32', ChecksumType: 'FULL_OBJECT' });
      const parts = await uploadParts(client(), bucket, 'mp/full', id, [big, tail], { ChecksumAlgorithm: 'CRC32' });
      const whole = crc32B64(Buffer.concat([big, tail]));
      const done = await client().send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: 'mp/full', UploadId: id, MultipartUpload: { Parts: parts } }));
      expect(done.ChecksumCRC32).toBe(whole);
      expect(done.ChecksumType).toBe('FULL_OBJECT');
      const got = await client().send(new GetObjectCommand({ Bucket: bucket, Key: 'mp/full', ChecksumMode: 'ENABLED' }));
      expect(got.ChecksumCRC32).toBe(whole);
      expect(Buffer.from(await bytesOf(got.Body)).equals(Buffer.concat([big, tail]))).toBe(true);
    });

    it('checksum rules: SHA256 cannot be FULL_OBJECT; a wrong part checksum is BadDigest', async () => {
      await expectS3Error(create('mp/x', { ChecksumAlgorithm: 'SHA256', ChecksumType: 'FULL_OBJECT' }), 'InvalidRequest', 400);
      await expectS3Error(create('mp/x', { ChecksumAlgorithm: 'CRC64NVME', ChecksumType: 'COMPOSITE' }), 'InvalidRequest', 400);
      const id = await create('mp/bad-part', { ChecksumAlgorithm: 'CRC32' });
      const cmd = new UploadPartCommand({ Bucket: bucket, Key: 'mp/bad-part', UploadId: id, PartNumber: 1, Body: tail, ChecksumCRC32: 'AAAAAA==' });
      await expectS3Error(client().send(cmd), 'BadDigest', 400);
      const listed = await client().send(new ListPartsCommand({ Bucket: bucket, Key: 'mp/bad-part', UploadId: id }));
      expect(listed.Parts ?? []).toEqual([]);
    });
  });
}
