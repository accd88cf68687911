/**
 * Lifecycle rules end to end: the gateway in workerd with a lifecycle day of 5 seconds
 * (SHARDGATE_LIFECYCLE_DAY_SECONDS, honoured with the local-development signal), rules set
 * through the SDK, the real cron handler run (/__test/cron), then what S3 clients see: in an
 * unversioned bucket expired objects are gone; in a versioned one a current version expires into
 * a delete marker, noncurrent versions beyond NewerNoncurrentVersions go after NoncurrentDays, an
 * expired object delete marker is removed; incomplete uploads are aborted; prefix and size
 * filters are respected; and x-amz-expiration names the rule on HEAD and on the writes
 * (PutObject, CopyObject, CompleteMultipartUpload), as S3 sends it.
 */
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetBucketLifecycleConfigurationCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectVersionsCommand,
  ListObjectsV2Command,
  PutBucketLifecycleConfigurationCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  UploadPartCommand,
  type LifecycleRule,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { r2Config, removeDir, startGateway, type RunningGateway } from './harness.ts';

const DAY_SECONDS = 5; // long enough that the writes of beforeAll and the first cron fit inside one day on a loaded machine
const PLAIN = 'lc-plain';
const VERSIONED = 'lc-versioned';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('lifecycle rules, run by the cron with a 5-second day', () => {
  let gw: RunningGateway;
  const s3 = () => gw.s3();
  const put = (Bucket: string, Key: string, size = 10) => s3().send(new PutObjectCommand({ Bucket, Key, Body: new Uint8Array(size).fill(7) }));
  const keys = async (Bucket: string) => ((await s3().send(new ListObjectsV2Command({ Bucket }))).Contents ?? []).map((o) => o.Key).sort();
  const versions = async (Bucket: string, Prefix: string) => {
    const r = await s3().send(new ListObjectVersionsCommand({ Bucket, Prefix }));
    return { versions: (r.Versions ?? []).map((v) => v.VersionId), markers: (r.DeleteMarkers ?? []).length };
  };
  const rules = (Bucket: string, Rules: LifecycleRule[]) =>
    s3().send(new PutBucketLifecycleConfigurationCommand({ Bucket, LifecycleConfiguration: { Rules } }));
  let ncVersions: string[] = [];
  const written: Record<string, string | undefined> = {};

  beforeAll(async () => {
    gw = await startGateway(r2Config(), { vars: { SHARDGATE_LIFECYCLE_DAY_SECONDS: String(DAY_SECONDS) } });
    await s3().send(new CreateBucketCommand({ Bucket: PLAIN }));
    await s3().send(new CreateBucketCommand({ Bucket: VERSIONED }));
    await s3().send(new PutBucketVersioningCommand({ Bucket: VERSIONED, VersioningConfiguration: { Status: 'Enabled' } }));
    await rules(PLAIN, [
      { ID: 'old', Status: 'Enabled', Filter: { Prefix: 'old/' }, Expiration: { Days: 1 } },
      { ID: 'big', Status: 'Enabled', Filter: { And: { Prefix: 'big/', ObjectSizeGreaterThan: 50_000 } }, Expiration: { Days: 1 } },
      { ID: 'uploads', Status: 'Enabled', Filter: { Prefix: 'up/' }, AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 } },
      { ID: 'off', Status: 'Disabled', Filter: { Prefix: 'keep/' }, Expiration: { Days: 1 } },
    ]);
    await rules(VERSIONED, [
      { ID: 'cur', Status: 'Enabled', Filter: { Prefix: 'cur/' }, Expiration: { Days: 1 } },
      { ID: 'nc', Status: 'Enabled', Filter: { Prefix: 'nc/' }, NoncurrentVersionExpiration: { NoncurrentDays: 1, NewerNoncurrentVersions: 1 } },
      { ID: 'dm', Status: 'Enabled', Filter: { Prefix: 'dm/' }, Expiration: { ExpiredObjectDeleteMarker: true } },
    ]);
    written.put = (await put(PLAIN, 'old/a')).Expiration;
    for (const key of ['keep/a', 'big/small']) written[key] = (await put(PLAIN, key)).Expiration;
    written.copy = (await s3().send(new CopyObjectCommand({ Bucket: PLAIN, Key: 'old/copy', CopySource: `${PLAIN}/keep/a` }))).Expiration;
    const { UploadId } = await s3().send(new CreateMultipartUploadCommand({ Bucket: PLAIN, Key: 'old/mp' }));
    const part = await s3().send(new UploadPartCommand({ Bucket: PLAIN, Key: 'old/mp', UploadId, PartNumber: 1, Body: new Uint8Array(10) }));
    const completed = await s3().send(
      new CompleteMultipartUploadCommand({ Bucket: PLAIN, Key: 'old/mp', UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag! }] } }),
    );
    written.complete = completed.Expiration;
    await put(PLAIN, 'big/large', 100_000); // coded 4+2
    await s3().send(new CreateMultipartUploadCommand({ Bucket: PLAIN, Key: 'up/x' }));
    await s3().send(new CreateMultipartUploadCommand({ Bucket: PLAIN, Key: 'keepup/x' }));
    await put(VERSIONED, 'cur/a');
    for (let i = 0; i < 4; i++) ncVersions.unshift((await put(VERSIONED, 'nc/a', 100 + i)).VersionId!); // newest first
    const v1 = (await put(VERSIONED, 'dm/a')).VersionId!;
    await s3().send(new DeleteObjectCommand({ Bucket: VERSIONED, Key: 'dm/a' }));
    await s3().send(new DeleteObjectCommand({ Bucket: VERSIONED, Key: 'dm/a', VersionId: v1 }));
  }, 180_000);

  afterAll(async () => {
    const dir = gw?.persistDir;
    await gw?.stop();
    if (dir) removeDir(dir);
  }, 60_000);

  it('reads back the rules and states the expiration on HEAD and on the writes (in real days, as S3 does)', async () => {
    const got = await s3().send(new GetBucketLifecycleConfigurationCommand({ Bucket: PLAIN }));
    expect(got.Rules?.map((r) => r.ID)).toEqual(['old', 'big', 'uploads', 'off']);
    const header = /^expiry-date="[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} 00:00:00 GMT", rule-id="old"$/;
    const head = (await s3().send(new HeadObjectCommand({ Bucket: PLAIN, Key: 'old/a' }))).Expiration;
    expect(head).toMatch(header);
    expect(written.put, 'PutObject states what HEAD states').toBe(head);
    expect(written.copy).toMatch(header);
    expect(written.complete).toMatch(header);
    expect((await s3().send(new HeadObjectCommand({ Bucket: PLAIN, Key: 'keep/a' }))).Expiration).toBeUndefined();
    expect(written['keep/a']).toBeUndefined(); // only a Disabled rule matches
    expect(written['big/small']).toBeUndefined(); // the size bound does not hold
  });

  it('nothing expires before its day is over', async () => {
    await gw.control('/__test/cron');
    expect(await keys(PLAIN)).toEqual(['big/large', 'big/small', 'keep/a', 'old/a', 'old/copy', 'old/mp']);
    expect((await versions(VERSIONED, 'nc/')).versions).toEqual(ncVersions);
  });

  it('after a day, the cron applies every rule, through the delete paths S3 clients use', async () => {
    await sleep(DAY_SECONDS * 1000 + 500);
    await gw.control('/__test/cron');
    // Unversioned: old/ and the large big/ object are gone; the small one, keep/ (Disabled rule) stay.
    expect(await keys(PLAIN)).toEqual(['big/small', 'keep/a']);
    const uploads = (await s3().send(new ListMultipartUploadsCommand({ Bucket: PLAIN }))).Uploads ?? [];
    expect(uploads.map((u) => u.Key)).toEqual(['keepup/x']);
    // Versioned: the current version expired into a delete marker, its data kept as a noncurrent version.
    expect(await versions(VERSIONED, 'cur/')).toMatchObject({ markers: 1 });
    expect((await versions(VERSIONED, 'cur/')).versions).toHaveLength(1);
    // Noncurrent: the current one and the newest noncurrent one stay.
    expect((await versions(VERSIONED, 'nc/')).versions).toEqual(ncVersions.slice(0, 2));
    // The delete marker left alone is removed.
    expect(await versions(VERSIONED, 'dm/')).toEqual({ versions: [], markers: 0 });
  });
});
