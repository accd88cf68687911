/**
 * Conformance: S3 versioning through @aws-sdk/client-s3. Put/GetBucketVersioning; version ids on
 * PUT, CopyObject, CompleteMultipartUpload and DELETE; GET/HEAD/DELETE by VersionId; delete
 * markers (404 with x-amz-delete-marker when current, 405 when named); the null version across
 * never-versioned, Enabled and Suspended; a version restored with CopyObject; ListObjectVersions
 * and its pages (1,000 versions of one key); DeleteObjects by VersionId; ListObjectsV2 unchanged;
 * conditional deletes (DeleteObject's IfMatch, IfMatchLastModifiedTime, IfMatchSize; DeleteObjects' ETag, LastModifiedTime, Size).
 */
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  DeleteObjectTaggingCommand,
  GetBucketVersioningCommand,
  GetObjectCommand,
  GetObjectTaggingCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  ListObjectVersionsCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  PutObjectTaggingCommand,
  UploadPartCommand,
  type ListObjectVersionsCommandOutput,
} from '@aws-sdk/client-s3';
import { beforeAll, describe, expect, it } from 'vitest';
import { bucketName, expectS3Error, type ChecksumMode, type Suite } from './context.ts';

export function versioningCases(suite: Suite, mode: ChecksumMode): void {
  const bucket = bucketName(mode, 'versioning');
  const client = () => suite().client;
  const put = async (Key: string, Body: string) => (await client().send(new PutObjectCommand({ Bucket: bucket, Key, Body }))).VersionId;
  const text = async (Key: string, VersionId?: string) =>
    (await client().send(new GetObjectCommand({ Bucket: bucket, Key, VersionId }))).Body!.transformToString();
  /** Versions (in the server's order: newest first) and delete markers, as [id, IsLatest]. */
  const versionsOf = async (Prefix: string) => {
    const r = await client().send(new ListObjectVersionsCommand({ Bucket: bucket, Prefix }));
    const brief = (v: { VersionId?: string; IsLatest?: boolean }) => [v.VersionId, v.IsLatest];
    return { versions: (r.Versions ?? []).map(brief), markers: (r.DeleteMarkers ?? []).map(brief), sizes: (r.Versions ?? []).map((v) => v.Size) };
  };

  describe('versioning', () => {
    beforeAll(async () => {
      await client().send(new CreateBucketCommand({ Bucket: bucket }));
    });

    it('a never-versioned object is the null version once versioning is enabled; new PUTs get ids; GET by VersionId', async () => {
      expect(await put('k', 'zero')).toBeUndefined(); // never versioned: no x-amz-version-id
      expect((await client().send(new GetBucketVersioningCommand({ Bucket: bucket }))).Status).toBeUndefined();
      await client().send(new PutBucketVersioningCommand({ Bucket: bucket, VersioningConfiguration: { Status: 'Enabled' } }));
      expect((await client().send(new GetBucketVersioningCommand({ Bucket: bucket }))).Status).toBe('Enabled');
      const v1 = await put('k', 'one');
      const v2 = await put('k', 'two');
      expect(v1).toMatch(/^[0-9a-f]{28}$/);
      expect(v2).not.toBe(v1);
      expect(await text('k')).toBe('two');
      expect(await text('k', v1)).toBe('one');
      expect(await text('k', 'null')).toBe('zero');
      const head = await client().send(new HeadObjectCommand({ Bucket: bucket, Key: 'k', VersionId: v1 }));
      expect([head.VersionId, head.ContentLength]).toEqual([v1, 3]);
      expect((await client().send(new GetObjectCommand({ Bucket: bucket, Key: 'k' }))).VersionId).toBe(v2);
      expect(await versionsOf('k')).toEqual({
        versions: [
          [v2, true],
          [v1, false],
          ['null', false],
        ],
        markers: [],
        sizes: [3, 3, 4],
      });
      await expectS3Error(client().send(new GetObjectCommand({ Bucket: bucket, Key: 'k', VersionId: '0'.repeat(28) })), 'NoSuchVersion', 404);
      await expectS3Error(client().send(new GetObjectCommand({ Bucket: bucket, Key: 'k', VersionId: 'not-a-version' })), 'InvalidArgument', 400);
    });

    it('DELETE adds a marker: GET 404 with x-amz-delete-marker, GET of the marker 405; deleting the marker restores', async () => {
      const v1 = await put('dm', 'data');
      const del = await client().send(new DeleteObjectCommand({ Bucket: bucket, Key: 'dm' }));
      expect(del.DeleteMarker).toBe(true);
      expect(del.VersionId).toMatch(/^[0-9a-f]{28}$/);
      const miss = (await expectS3Error(client().send(new GetObjectCommand({ Bucket: bucket, Key: 'dm' })), 'NoSuchKey', 404)) as {
        DeleteMarker?: boolean;
        $response?: { headers: Record<string, string> };
      };
      expect(miss.$response?.headers['x-amz-delete-marker']).toBe('true');
      const headMiss = (await expectS3Error(client().send(new HeadObjectCommand({ Bucket: bucket, Key: 'dm' })), 'NotFound', 404)) as {
        $response?: { headers: Record<string, string> };
      };
      expect(headMiss.$response?.headers['x-amz-version-id']).toBe(del.VersionId);
      await expectS3Error(client().send(new GetObjectCommand({ Bucket: bucket, Key: 'dm', VersionId: del.VersionId })), 'MethodNotAllowed', 405);
      expect((await client().send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'dm' }))).Contents).toBeUndefined();
      expect(await versionsOf('dm')).toEqual({ versions: [[v1, false]], markers: [[del.VersionId, true]], sizes: [4] });
      const undo = await client().send(new DeleteObjectCommand({ Bucket: bucket, Key: 'dm', VersionId: del.VersionId }));
      expect([undo.DeleteMarker, undo.VersionId]).toEqual([true, del.VersionId]);
      expect(await text('dm')).toBe('data');
      // Deleting the current data version by id makes nothing current: the key is gone, no marker.
      const gone = await client().send(new DeleteObjectCommand({ Bucket: bucket, Key: 'dm', VersionId: v1 }));
      expect([gone.DeleteMarker, gone.VersionId]).toEqual([undefined, v1]);
      expect(await versionsOf('dm')).toEqual({ versions: [], markers: [], sizes: [] });
    });

    it('tagging a delete marker by its version id: 405 MethodNotAllowed, as a GET of it; the version under it keeps taking tags', async () => {
      const v1 = await put('tm', 'data');
      const marker = (await client().send(new DeleteObjectCommand({ Bucket: bucket, Key: 'tm' }))).VersionId;
      const TagSet = [{ Key: 'team', Value: 'blue' }];
      const refusals = [
        await expectS3Error(
          client().send(new PutObjectTaggingCommand({ Bucket: bucket, Key: 'tm', VersionId: marker, Tagging: { TagSet } })),
          'MethodNotAllowed',
          405,
        ),
        await expectS3Error(client().send(new DeleteObjectTaggingCommand({ Bucket: bucket, Key: 'tm', VersionId: marker })), 'MethodNotAllowed', 405),
        await expectS3Error(client().send(new GetObjectTaggingCommand({ Bucket: bucket, Key: 'tm', VersionId: marker })), 'MethodNotAllowed', 405),
      ] as { $response?: { headers: Record<string, string> } }[];
      for (const r of refusals) {
        const h = r.$response?.headers ?? {};
        expect([h['x-amz-delete-marker'], h['x-amz-version-id'], h['allow']]).toEqual(['true', marker, 'DELETE']);
      }
      await client().send(new PutObjectTaggingCommand({ Bucket: bucket, Key: 'tm', VersionId: v1, Tagging: { TagSet } }));
      expect((await client().send(new GetObjectTaggingCommand({ Bucket: bucket, Key: 'tm', VersionId: v1 }))).TagSet).toEqual(TagSet);
    });

    it('restores an old version with CopyObject (x-amz-copy-source ?versionId=), a new version on top', async () => {
      const old = await put('r', 'good');
      await put('r', 'bad');
      const copy = await client().send(new CopyObjectCommand({ Bucket: bucket, Key: 'r', CopySource: `${bucket}/r?versionId=${old}` }));
      expect(copy.CopySourceVersionId).toBe(old);
      expect(copy.VersionId).toMatch(/^[0-9a-f]{28}$/);
      expect(await text('r')).toBe('good');
      expect((await versionsOf('r')).versions.map(([id]) => id)).toEqual([copy.VersionId, expect.any(String), old]);
    });

    it('CompleteMultipartUpload and tagging by version', async () => {
      const { UploadId } = await client().send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'mp' }));
      const part = await client().send(new UploadPartCommand({ Bucket: bucket, Key: 'mp', UploadId, PartNumber: 1, Body: 'part' }));
      const done = await client().send(
        new CompleteMultipartUploadCommand({
          Bucket: bucket,
          Key: 'mp',
          UploadId,
          MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag, ChecksumCRC32: part.ChecksumCRC32 }] },
        }),
      );
      expect(done.VersionId).toMatch(/^[0-9a-f]{28}$/);
      await put('mp', 'newer');
      await client().send(
        new PutObjectTaggingCommand({ Bucket: bucket, Key: 'mp', VersionId: done.VersionId, Tagging: { TagSet: [{ Key: 'v', Value: 'first' }] } }),
      );
      expect((await client().send(new GetObjectTaggingCommand({ Bucket: bucket, Key: 'mp', VersionId: done.VersionId }))).TagSet).toEqual([
        { Key: 'v', Value: 'first' },
      ]);
      expect((await client().send(new GetObjectTaggingCommand({ Bucket: bucket, Key: 'mp' }))).TagSet).toEqual([]);
    });

    it('Suspended: PUT replaces the null version, older ids stay; DeleteObjects by VersionId', async () => {
      const b = `${bucket}-s`;
      await client().send(new CreateBucketCommand({ Bucket: b }));
      await client().send(new PutBucketVersioningCommand({ Bucket: b, VersioningConfiguration: { Status: 'Enabled' } }));
      const kept = (await client().send(new PutObjectCommand({ Bucket: b, Key: 'k', Body: 'kept' }))).VersionId!;
      await client().send(new PutBucketVersioningCommand({ Bucket: b, VersioningConfiguration: { Status: 'Suspended' } }));
      expect((await client().send(new GetBucketVersioningCommand({ Bucket: b }))).Status).toBe('Suspended');
      for (const body of ['n1', 'n2']) expect((await client().send(new PutObjectCommand({ Bucket: b, Key: 'k', Body: body }))).VersionId).toBeUndefined(); // the null version: no header, as S3
      expect((await client().send(new HeadObjectCommand({ Bucket: b, Key: 'k' }))).VersionId).toBe('null');
      const listed = await client().send(new ListObjectVersionsCommand({ Bucket: b }));
      expect(listed.Versions?.map((v) => [v.VersionId, v.IsLatest])).toEqual([
        ['null', true],
        [kept, false],
      ]);
      const r = await client().send(
        new DeleteObjectsCommand({ Bucket: b, Delete: { Objects: [{ Key: 'k', VersionId: 'null' }, { Key: 'k', VersionId: kept }, { Key: 'other' }] } }),
      );
      const byVersion = Object.fromEntries((r.Deleted ?? []).map((d) => [d.VersionId ?? d.Key!, d]));
      expect(byVersion.null).toMatchObject({ Key: 'k', VersionId: 'null' });
      expect(byVersion[kept]).toMatchObject({ Key: 'k', VersionId: kept });
      expect(byVersion.other).toMatchObject({ Key: 'other', DeleteMarker: true, DeleteMarkerVersionId: 'null' }); // Suspended: a null marker
      expect(r.Errors).toBeUndefined();
      expect((await client().send(new ListObjectVersionsCommand({ Bucket: b }))).DeleteMarkers?.map((d) => d.Key)).toEqual(['other']);
    });

    it('conditional deletes through the SDK: IfMatch, IfMatchLastModifiedTime, IfMatchSize; DeleteObjects ETag, LastModifiedTime, Size', async () => {
      await client().send(new PutBucketVersioningCommand({ Bucket: bucket, VersioningConfiguration: { Status: 'Enabled' } })); // as the first case left it (so it runs alone too)
      const v1 = await put('cd', 'four');
      const head = await client().send(new HeadObjectCommand({ Bucket: bucket, Key: 'cd', VersionId: v1 }));
      await put('cd', 'newer');
      const del = (o: { IfMatch?: string; IfMatchLastModifiedTime?: Date; IfMatchSize?: number; VersionId?: string }) =>
        client().send(new DeleteObjectCommand({ Bucket: bucket, Key: 'cd', ...o }));
      await expectS3Error(del({ VersionId: v1, IfMatch: '"0123"' }), 'PreconditionFailed', 412);
      await expectS3Error(del({ VersionId: v1, IfMatchSize: 5 }), 'PreconditionFailed', 412);
      await expectS3Error(del({ VersionId: v1, IfMatchLastModifiedTime: new Date(Date.UTC(2015, 0, 1)) }), 'PreconditionFailed', 412);
      expect(await text('cd', v1)).toBe('four');
      const gone = await del({ VersionId: v1, IfMatch: head.ETag, IfMatchLastModifiedTime: head.LastModified, IfMatchSize: 4 });
      expect([gone.VersionId, gone.DeleteMarker]).toEqual([v1, undefined]);
      expect(await del({ VersionId: v1, IfMatch: '"0123"' })).toMatchObject({ VersionId: v1 }); // gone already: no error
      // The current version: a match adds a marker; then there is no current object (NoSuchKey).
      await expectS3Error(del({ IfMatchSize: 4 }), 'PreconditionFailed', 412);
      expect((await del({ IfMatch: '*', IfMatchSize: 5 })).DeleteMarker).toBe(true);
      await expectS3Error(del({ IfMatch: '*' }), 'NoSuchKey', 404);
      // DeleteObjects: each entry on its own.
      const a = await client().send(new PutObjectCommand({ Bucket: bucket, Key: 'cd-a', Body: 'aa' }));
      const b = await client().send(new PutObjectCommand({ Bucket: bucket, Key: 'cd-b', Body: 'bbb' }));
      const bHead = await client().send(new HeadObjectCommand({ Bucket: bucket, Key: 'cd-b' }));
      const r = await client().send(
        new DeleteObjectsCommand({
          Bucket: bucket,
          Delete: {
            Objects: [
              { Key: 'cd-a', VersionId: a.VersionId, ETag: '"0123"' },
              { Key: 'cd-b', VersionId: b.VersionId, ETag: b.ETag, Size: 3, LastModifiedTime: bHead.LastModified },
              { Key: 'cd-a', Size: 9 },
            ],
          },
        }),
      );
      expect((r.Deleted ?? []).map((d) => [d.Key, d.VersionId])).toEqual([['cd-b', b.VersionId]]);
      expect((r.Errors ?? []).map((e) => [e.Key, e.Code])).toEqual([
        ['cd-a', 'PreconditionFailed'],
        ['cd-a', 'PreconditionFailed'],
      ]);
      expect(await text('cd-a', a.VersionId)).toBe('aa');
    });

    it('MfaDelete Enabled and an unknown Status are refused', async () => {
      await expectS3Error(
        client().send(new PutBucketVersioningCommand({ Bucket: bucket, VersioningConfiguration: { Status: 'Enabled', MFADelete: 'Enabled' } })),
        'NotImplemented',
        501,
      );
      await expectS3Error(
        client().send(new PutBucketVersioningCommand({ Bucket: bucket, VersioningConfiguration: { Status: 'On' as 'Enabled' } })),
        'MalformedXML',
        400,
      );
      expect((await client().send(new GetBucketVersioningCommand({ Bucket: bucket }))).Status).toBe('Enabled');
    });

    it.runIf(mode === 'defaults')('1,000 versions of one key page through ListObjectVersions, newest first, none lost or repeated', async () => {
      const made: string[] = [];
      for (let i = 0; i < 1000; i++) made.unshift((await put('many', String(i)))!);
      const seen: string[] = [];
      let page: ListObjectVersionsCommandOutput | undefined;
      let pages = 0;
      do {
        page = await client().send(
          new ListObjectVersionsCommand({
            Bucket: bucket,
            Prefix: 'many',
            MaxKeys: 300,
            KeyMarker: page?.NextKeyMarker,
            VersionIdMarker: page?.NextVersionIdMarker,
          }),
        );
        seen.push(...(page.Versions ?? []).map((v) => v.VersionId!));
        pages++;
      } while (page.IsTruncated);
      expect(pages).toBe(4);
      expect(seen).toEqual(made);
      expect(await text('many', made[999])).toBe('0');
    });
  });
}
