/**
 * Tagging: PutObjectTagging, GetObjectTagging, DeleteObjectTagging, PutBucketTagging,
 * GetBucketTagging, DeleteBucketTagging, and `x-amz-tagging` on PutObject, CopyObject (with
 * `x-amz-tagging-directive: COPY|REPLACE`, COPY by default) and CreateMultipartUpload.
 * Object tags live in the object's metadata record (the manifest in the catalog, and the shard
 * headers of the write that set them); bucket tags in the bucket's catalog state. Changing an
 * object's tags rewrites its catalog record and stores a tag record beside its shards
 * (engine/tag-record.ts, so a catalog rebuilt from the backends has them), never its data.
 * Spec: S3 API reference of each (a `<Tagging><TagSet><Tag><Key/><Value/></Tag>...` document);
 * limits and errors in model/tagging.ts. GetBucketTagging without tags is NoSuchTagSet;
 * GetObjectTagging without tags is an empty TagSet. GET/HEAD report `x-amz-tagging-count`.
 * Known gap: tag changes are not written to the shard headers, so an index rebuilt from the
 * backends has the tags as of the object's write.
 */
import { S3Error } from '../model/errors.ts';
import type { ObjectMetadata } from '../model/object-store.ts';
import { MAX_BUCKET_TAGS, MAX_OBJECT_TAGS, parseTaggingHeader, validTags, type Tag } from '../model/tagging.ts';
import { readXmlBody } from './body.ts';
import type { S3Context } from './context.ts';
import { el, group, xmlDocument, xmlResponse } from './xml.ts';
import { readVersionId, versionHeader } from './versioning.ts';
import { childText, childrenNamed, expectRoot, malformedXml, parseXml } from './xml-parse.ts';

/** `metadata` with the tags of an `x-amz-tagging` header, if there is one. */
export function withHeaderTags(metadata: ObjectMetadata, headers: Headers): ObjectMetadata {
  const header = headers.get('x-amz-tagging');
  if (header === null) return metadata;
  const tags = parseTaggingHeader(header);
  return tags.length ? { ...metadata, tags } : metadata;
}

/** CopyObject's `x-amz-tagging-directive`: the source's tags (COPY) or the header's (REPLACE). */
export function readTaggingDirective(headers: Headers): 'COPY' | Tag[] {
  const directive = (headers.get('x-amz-tagging-directive') ?? 'COPY').toUpperCase();
  if (directive === 'COPY') return 'COPY';
  if (directive !== 'REPLACE')
    throw new S3Error('InvalidArgument', 'Unknown tagging directive.', { ArgumentName: 'x-amz-tagging-directive', ArgumentValue: directive });
  return parseTaggingHeader(headers.get('x-amz-tagging') ?? '');
}

async function readTagging(s3: S3Context, max: number): Promise<Tag[]> {
  return parseTaggingXml(await readXmlBody(s3, { requireDigest: false }), max);
}

/** A `<Tagging><TagSet>...` document's tags, validated (at most `max`). */
export function parseTaggingXml(xml: string, max: number): Tag[] {
  const root = expectRoot(parseXml(xml), 'Tagging');
  const set = childrenNamed(root, 'TagSet')[0];
  if (!set) throw malformedXml('<Tagging> needs a <TagSet>');
  const tags = childrenNamed(set, 'Tag').map((t) => {
    const key = childText(t, 'Key');
    const value = childText(t, 'Value');
    if (key === undefined || value === undefined) throw malformedXml('a <Tag> needs <Key> and <Value>');
    return { key, value };
  });
  return validTags(tags, max);
}

export function taggingXml(tags: Tag[]): string {
  return xmlDocument('Tagging', group('TagSet', ...tags.map((t) => group('Tag', el('Key', t.key), el('Value', t.value)))));
}

export async function GetObjectTagging(s3: S3Context): Promise<Response> {
  const versionId = readVersionId(s3.query);
  const head = await s3.store.headObject(s3.bucket!, s3.key!, { conditions: {}, tags: true, ...(versionId === undefined ? {} : { versionId }) });
  return xmlResponse(taggingXml(head.metadata.tags ?? []), versionHeader(head.versionId));
}

/**
 * Sets the tags of the current version or of `?versionId`. A delete marker named by its id is
 * 405 MethodNotAllowed with the marker's headers, as a GET of it is (ec-store.ts readable): the
 * catalog only knows the version is a marker, the request's method is named here.
 */
async function setObjectTags(s3: S3Context, tags: Tag[], method: 'PUT' | 'DELETE'): Promise<string | undefined> {
  const versionId = readVersionId(s3.query);
  try {
    await s3.store.putObjectTagging(s3.bucket!, s3.key!, tags, versionId);
  } catch (err) {
    if (!(err instanceof S3Error && err.code === 'MethodNotAllowed' && versionId !== undefined)) throw err;
    throw new S3Error('MethodNotAllowed', undefined, { Method: method, ResourceType: 'DeleteMarker' }).withHeaders({
      'x-amz-delete-marker': 'true',
      'x-amz-version-id': versionId,
      Allow: 'DELETE',
    });
  }
  return versionId;
}

export async function PutObjectTagging(s3: S3Context): Promise<Response> {
  const tags = await readTagging(s3, MAX_OBJECT_TAGS);
  return new Response(null, { headers: versionHeader(await setObjectTags(s3, tags, 'PUT')) });
}

export async function DeleteObjectTagging(s3: S3Context): Promise<Response> {
  return new Response(null, { status: 204, headers: versionHeader(await setObjectTags(s3, [], 'DELETE')) });
}

export async function GetBucketTagging(s3: S3Context): Promise<Response> {
  return xmlResponse(taggingXml(await s3.config.getBucketTagging(s3.bucket!)));
}

export async function PutBucketTagging(s3: S3Context): Promise<Response> {
  const tags = await readTagging(s3, MAX_BUCKET_TAGS);
  await s3.config.putBucketTagging(s3.bucket!, tags);
  return new Response(null, { status: 204 });
}

export async function DeleteBucketTagging(s3: S3Context): Promise<Response> {
  await s3.config.putBucketTagging(s3.bucket!, []);
  return new Response(null, { status: 204 });
}
