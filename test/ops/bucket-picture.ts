/**
 * What a client sees of a bucket, through the S3 API: every version and marker in order, each
 * version's bytes (as an MD5), tags and metadata; the bucket's versioning, CORS and tags. The
 * recovery tests compare it before a catalog loss and after the rebuild.
 */
import {
  GetBucketCorsCommand,
  GetBucketTaggingCommand,
  GetBucketVersioningCommand,
  GetObjectCommand,
  GetObjectTaggingCommand,
  ListObjectVersionsCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';

const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');

export async function bucketPicture(s3: S3Client, bucket: string) {
  const listed = await s3.send(new ListObjectVersionsCommand({ Bucket: bucket }));
  const versions = [];
  for (const v of listed.Versions ?? []) {
    const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: v.Key!, VersionId: v.VersionId }));
    const bytes = await got.Body!.transformToByteArray();
    const tags = await s3.send(new GetObjectTaggingCommand({ Bucket: bucket, Key: v.Key!, VersionId: v.VersionId }));
    versions.push({
      key: v.Key,
      versionId: v.VersionId,
      isLatest: v.IsLatest,
      etag: v.ETag,
      size: v.Size,
      md5: md5(bytes),
      metadata: got.Metadata,
      contentType: got.ContentType,
      tags: tags.TagSet?.map((t) => `${t.Key}=${t.Value}`),
    });
  }
  const markers = (listed.DeleteMarkers ?? []).map((m) => ({ key: m.Key, versionId: m.VersionId, isLatest: m.IsLatest }));
  const versioning = (await s3.send(new GetBucketVersioningCommand({ Bucket: bucket }))).Status ?? null;
  const cors = await s3.send(new GetBucketCorsCommand({ Bucket: bucket })).then(
    (r) => r.CORSRules,
    () => null,
  );
  const tagging = await s3.send(new GetBucketTaggingCommand({ Bucket: bucket })).then(
    (r) => r.TagSet,
    () => null,
  );
  return { versions, markers, versioning, cors, tagging };
}

export type BucketPicture = Awaited<ReturnType<typeof bucketPicture>>;
