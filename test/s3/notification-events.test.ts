/**
 * Bucket event notifications end to end through the real front door, received by a real HTTP
 * webhook (test/support/event-gateway.ts), re-expressed from Ceph RGW's HTTP notification tests
 * (ceph/src/test/rgw/bucket_notification/test_bn.py: test_ps_s3_notification_push_http_on_master
 * and its versioned, multipart, copy and multi-delete variants): objects created then deleted,
 * the events received matching keys, sizes, ETags and event names exactly; DeleteObjects of many
 * keys; copy and multipart complete; a versioned bucket's delete markers; lifecycle expirations
 * (the test day of the lifecycle job); tagging; prefix/suffix filters; a refused write yields no
 * event. Small objects here (1 MiB ones: SHARDGATE_FULL_SIZE=1).
 */
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectTaggingCommand,
  DeleteObjectsCommand,
  PutBucketNotificationConfigurationCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  PutObjectTaggingCommand,
  type S3ServiceException,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventGateway, type EventRecord } from '../support/event-gateway.ts';
import { lifecycleBatch } from '../../worker/upkeep/lifecycle.ts';

const FULL = process.env.SHARDGATE_FULL_SIZE === '1';
const OBJECT_SIZE = FULL ? 1024 * 1024 : 1000;
const HOOK = 'arn:aws:sns:us-east-1:000000000000:hook';

let g: Awaited<ReturnType<typeof eventGateway>>;
let n = 0;

beforeAll(async () => {
  g = await eventGateway();
});
afterAll(async () => g?.close());

/** A bucket announcing `events` (all object events by default) to the webhook. */
async function announcingBucket(events = ['s3:ObjectCreated:*', 's3:ObjectRemoved:*', 's3:LifecycleExpiration:*', 's3:ObjectTagging:*'], versioned = false) {
  const bucket = `ev-${++n}`;
  await g.client.send(new CreateBucketCommand({ Bucket: bucket }));
  if (versioned) await g.client.send(new PutBucketVersioningCommand({ Bucket: bucket, VersioningConfiguration: { Status: 'Enabled' } }));
  await g.client.send(
    new PutBucketNotificationConfigurationCommand({
      Bucket: bucket,
      NotificationConfiguration: { TopicConfigurations: [{ Id: `cfg-${bucket}`, TopicArn: HOOK, Events: events as 's3:ObjectCreated:*'[] }] },
    }),
  );
  return bucket;
}

/** Delivers everything due and answers the records of `bucket` received since `from`. */
async function received(bucket: string, from = 0): Promise<EventRecord[]> {
  await g.deliver(Date.now());
  return g.receiver
    .records()
    .filter((r) => r.s3.bucket.name === bucket)
    .slice(from);
}

const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');
const body = (i: number) => new Uint8Array(OBJECT_SIZE).fill(i % 251);

describe('bucket event notifications, as Ceph RGW tests them', () => {
  it('100 objects created then deleted: the events match keys, sizes, ETags and names exactly', async () => {
    const bucket = await announcingBucket();
    const keys = Array.from({ length: 100 }, (_, i) => `key-${String(i).padStart(3, '0')}`);
    const etags = new Map<string, string>();
    for (let i = 0; i < keys.length; i++) {
      const r = await g.client.send(new PutObjectCommand({ Bucket: bucket, Key: keys[i]!, Body: body(i) }));
      etags.set(keys[i]!, r.ETag!.replace(/"/g, ''));
      expect(etags.get(keys[i]!)).toBe(md5(body(i)));
    }
    const created = await received(bucket);
    expect(created.map((r) => [r.eventName, r.s3.object.key, r.s3.object.size, r.s3.object.eTag])).toEqual(
      keys.map((k) => ['ObjectCreated:Put', k, OBJECT_SIZE, etags.get(k)]),
    );
    const first = created[0]!;
    expect(first).toMatchObject({
      eventVersion: '2.1',
      eventSource: 'aws:s3',
      awsRegion: 'us-east-1',
      userIdentity: { principalId: 'AKIDTESTSIGNERS' },
      requestParameters: { sourceIPAddress: expect.any(String) },
      s3: { s3SchemaVersion: '1.0', configurationId: `cfg-${bucket}`, bucket: { name: bucket, arn: `arn:aws:s3:::${bucket}` } },
    });
    expect(Date.parse(first.eventTime)).toBeGreaterThan(0);
    for (const k of keys) await g.client.send(new DeleteObjectCommand({ Bucket: bucket, Key: k }));
    const deleted = await received(bucket, created.length);
    expect(deleted.map((r) => [r.eventName, r.s3.object.key])).toEqual(keys.map((k) => ['ObjectRemoved:Delete', k]));
    expect(deleted.every((r) => r.s3.object.size === undefined && r.s3.object.eTag === undefined)).toBe(true); // as AWS: no size or ETag on removal
    // One partition's sequencer: strictly increasing in commit order, so per key too.
    const seq = [...created, ...deleted].map((r) => r.s3.object.sequencer);
    expect(seq.every((s, i) => i === 0 || s > seq[i - 1]!)).toBe(true);
    // A delete of a key that is not there changes nothing and announces nothing.
    await g.client.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'never-was' }));
    expect(await received(bucket, created.length + deleted.length)).toEqual([]);
  });

  it('a bucket split into partitions: each announces its own keys, from the rules copied to it, with its own sequencer', async () => {
    const bucket = `ev-${++n}`;
    await g.client.send(new CreateBucketCommand({ Bucket: bucket }));
    if ((await g.catalog.getPartitionMap(bucket)).ranges.length === 1) await g.catalog.splitBucketStatically(bucket, ['m']);
    const map = await g.catalog.getPartitionMap(bucket);
    expect(map.ranges.length).toBeGreaterThan(1);
    const home = (key: string) => [...map.ranges].reverse().find((r) => r.low <= key)!.instance;
    expect(home('apple')).not.toBe(home('zebra'));
    await g.client.send(
      new PutBucketNotificationConfigurationCommand({
        Bucket: bucket,
        NotificationConfiguration: { TopicConfigurations: [{ Id: 'split', TopicArn: HOOK, Events: ['s3:ObjectCreated:*', 's3:ObjectRemoved:*'] }] },
      }),
    );
    for (const key of ['apple', 'zebra', 'apple', 'zebra']) await g.client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: key }));
    await g.client.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'zebra' }));
    const events = await received(bucket);
    const of = (key: string) => events.filter((r) => r.s3.object.key === key);
    expect(of('apple').map((r) => r.eventName)).toEqual(['ObjectCreated:Put', 'ObjectCreated:Put']);
    expect(of('zebra').map((r) => r.eventName)).toEqual(['ObjectCreated:Put', 'ObjectCreated:Put', 'ObjectRemoved:Delete']);
    for (const key of ['apple', 'zebra']) {
      const seq = of(key).map((r) => r.s3.object.sequencer);
      expect(seq.every((s, i) => i === 0 || s > seq[i - 1]!)).toBe(true);
    }
    // Two partitions, two outboxes: the status sums them.
    const [hook] = await g.catalog.eventStatus(bucket, new Date());
    expect(hook).toMatchObject({ destination: 'hook', delivered: 6, backlog: 0 }); // 5 events and the test event
  });

  it('a key is URL-encoded as AWS encodes it (space as +, / kept)', async () => {
    const bucket = await announcingBucket();
    const key = 'dir/a file+name=é?.txt';
    await g.client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'x' }));
    const [r] = await received(bucket);
    expect(r!.s3.object.key).toBe('dir/a+file%2Bname%3D%C3%A9%3F.txt');
    expect(decodeURIComponent(r!.s3.object.key.replace(/\+/g, ' '))).toBe(key);
  });

  it('DeleteObjects of many keys: one ObjectRemoved:Delete each', async () => {
    const bucket = await announcingBucket(['s3:ObjectRemoved:*']);
    const keys = Array.from({ length: 50 }, (_, i) => `multi/${i}`);
    for (const k of keys) await g.client.send(new PutObjectCommand({ Bucket: bucket, Key: k, Body: 'x' }));
    await g.client.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: keys.map((Key) => ({ Key })) } }));
    const events = await received(bucket);
    expect(events.map((r) => r.eventName)).toEqual(keys.map(() => 'ObjectRemoved:Delete'));
    expect(events.map((r) => r.s3.object.key).sort()).toEqual(keys.map((k) => k).sort());
  });

  it('copy and multipart complete announce ObjectCreated:Copy and ObjectCreated:CompleteMultipartUpload', async () => {
    const bucket = await announcingBucket(['s3:ObjectCreated:*']);
    const source = await g.client.send(new PutObjectCommand({ Bucket: bucket, Key: 'source', Body: body(1) }));
    const copy = await g.client.send(new CopyObjectCommand({ Bucket: bucket, Key: 'copy', CopySource: `${bucket}/source` }));
    const upload = await g.client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'multi' }));
    const part = await g.client.send(new UploadPartCommand({ Bucket: bucket, Key: 'multi', UploadId: upload.UploadId, PartNumber: 1, Body: body(2) }));
    const done = await g.client.send(
      new CompleteMultipartUploadCommand({
        Bucket: bucket,
        Key: 'multi',
        UploadId: upload.UploadId,
        MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] },
      }),
    );
    const events = await received(bucket);
    expect(events.map((r) => [r.eventName, r.s3.object.key, r.s3.object.size, r.s3.object.eTag])).toEqual([
      ['ObjectCreated:Put', 'source', OBJECT_SIZE, source.ETag!.replace(/"/g, '')],
      ['ObjectCreated:Copy', 'copy', OBJECT_SIZE, copy.CopyObjectResult!.ETag!.replace(/"/g, '')],
      ['ObjectCreated:CompleteMultipartUpload', 'multi', OBJECT_SIZE, done.ETag!.replace(/"/g, '')],
    ]);
  });

  it('a versioned bucket: versions and delete markers carry their version ids; deleting a version is ObjectRemoved:Delete', async () => {
    const bucket = await announcingBucket(undefined, true);
    const v1 = await g.client.send(new PutObjectCommand({ Bucket: bucket, Key: 'k', Body: 'one' }));
    const v2 = await g.client.send(new PutObjectCommand({ Bucket: bucket, Key: 'k', Body: 'two' }));
    const marker = await g.client.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'k' }));
    await g.client.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'k', VersionId: v1.VersionId }));
    await g.client.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'k', VersionId: marker.VersionId }));
    const events = await received(bucket);
    expect(events.map((r) => [r.eventName, r.s3.object.versionId])).toEqual([
      ['ObjectCreated:Put', v1.VersionId],
      ['ObjectCreated:Put', v2.VersionId],
      ['ObjectRemoved:DeleteMarkerCreated', marker.VersionId],
      ['ObjectRemoved:Delete', v1.VersionId],
      ['ObjectRemoved:Delete', marker.VersionId],
    ]);
  });

  it('lifecycle expirations announce s3:LifecycleExpiration:Delete (and DeleteMarkerCreated when versioned), by the lifecycle principal', async () => {
    const plain = await announcingBucket(['s3:LifecycleExpiration:*']);
    const versioned = await announcingBucket(['s3:LifecycleExpiration:*'], true);
    for (const b of [plain, versioned]) {
      await g.store.config.putBucketLifecycle(b, [{ id: 'all', status: 'Enabled', filter: { prefix: 'old/' }, expiration: { days: 1 } }]);
      await g.client.send(new PutObjectCommand({ Bucket: b, Key: 'old/a', Body: 'x' }));
      await g.client.send(new PutObjectCommand({ Bucket: b, Key: 'new/b', Body: 'x' }));
    }
    const DAY = 1000; // the lifecycle job's test day
    for (let i = 0; i < 5; i++) await lifecycleBatch(g.catalog, g.store, { dayMs: DAY, versionsPerRun: 100, now: () => Date.now() + 5 * DAY });
    const [p] = await received(plain);
    expect(p).toMatchObject({ eventName: 'LifecycleExpiration:Delete', userIdentity: { principalId: 's3.amazonaws.com' }, s3: { object: { key: 'old/a' } } });
    expect(await received(plain, 1)).toEqual([]); // 'new/b' stays
    const [v] = await received(versioned);
    expect(v).toMatchObject({ eventName: 'LifecycleExpiration:DeleteMarkerCreated', s3: { object: { key: 'old/a', versionId: expect.any(String) } } });
  });

  it('tagging announces s3:ObjectTagging:Put and :Delete', async () => {
    const bucket = await announcingBucket(['s3:ObjectTagging:*']);
    await g.client.send(new PutObjectCommand({ Bucket: bucket, Key: 't', Body: 'x' }));
    await g.client.send(new PutObjectTaggingCommand({ Bucket: bucket, Key: 't', Tagging: { TagSet: [{ Key: 'a', Value: 'b' }] } }));
    await g.client.send(new DeleteObjectTaggingCommand({ Bucket: bucket, Key: 't' }));
    expect((await received(bucket)).map((r) => [r.eventName, r.s3.object.key])).toEqual([
      ['ObjectTagging:Put', 't'],
      ['ObjectTagging:Delete', 't'],
    ]);
  });

  it('prefix and suffix filters: only the keys they match are announced', async () => {
    const bucket = `ev-${++n}`;
    await g.client.send(new CreateBucketCommand({ Bucket: bucket }));
    await g.client.send(
      new PutBucketNotificationConfigurationCommand({
        Bucket: bucket,
        NotificationConfiguration: {
          QueueConfigurations: [
            {
              Id: 'jpg',
              QueueArn: HOOK,
              Events: ['s3:ObjectCreated:*'],
              Filter: {
                Key: {
                  FilterRules: [
                    { Name: 'prefix', Value: 'img/' },
                    { Name: 'suffix', Value: '.jpg' },
                  ],
                },
              },
            },
          ],
        },
      }),
    );
    for (const k of ['img/a.jpg', 'img/b.png', 'doc/c.jpg', 'img/sub/d.jpg']) await g.client.send(new PutObjectCommand({ Bucket: bucket, Key: k, Body: 'x' }));
    expect((await received(bucket)).map((r) => r.s3.object.key)).toEqual(['img/a.jpg', 'img/sub/d.jpg']);
  });

  it('a PUT with a matching rule costs the catalog the calls a PUT without one does (2: prepare and commit)', async () => {
    const plain = `ev-${++n}`;
    await g.client.send(new CreateBucketCommand({ Bucket: plain }));
    const announcing = await announcingBucket(['s3:ObjectCreated:*']);
    const callsOf = async (bucket: string, size: number) => {
      await g.client.send(new PutObjectCommand({ Bucket: bucket, Key: 'warm', Body: new Uint8Array(size) })); // settings seen by this isolate
      const before = new Map(g.namespace.calls);
      await g.client.send(new PutObjectCommand({ Bucket: bucket, Key: 'counted', Body: new Uint8Array(size).fill(1) }));
      return Object.fromEntries([...g.namespace.calls].filter(([op, n]) => n !== (before.get(op) ?? 0)).map(([op, n]) => [op, n - (before.get(op) ?? 0)]));
    };
    // Coded (on the backends): prepare, then commit; inline (in the catalog): the commit alone.
    const coded = await callsOf(plain, 20_000);
    expect(coded).toEqual({ prepareWrite: 1, commitManifest: 1 });
    expect(await callsOf(announcing, 20_000)).toEqual(coded);
    const inline = await callsOf(plain, 100);
    expect(inline).toEqual({ commitManifest: 1 });
    expect(await callsOf(announcing, 100)).toEqual(inline);
    expect((await received(announcing)).map((r) => r.s3.object.key)).toEqual(['warm', 'counted', 'warm', 'counted']);
  });

  it('a refused write yields no event: a failed condition, a missing upload', async () => {
    const bucket = await announcingBucket();
    await g.client.send(new PutObjectCommand({ Bucket: bucket, Key: 'k', Body: 'x' }));
    const before = (await received(bucket)).length;
    const refused = async (p: Promise<unknown>) => {
      try {
        await p;
        return 'ok';
      } catch (err) {
        return (err as S3ServiceException).name;
      }
    };
    expect(await refused(g.client.send(new PutObjectCommand({ Bucket: bucket, Key: 'k', Body: 'y', IfNoneMatch: '*' })))).toBe('PreconditionFailed');
    expect(await refused(g.client.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'k', IfMatch: '"0123456789abcdef0123456789abcdef"' })))).toBe(
      'PreconditionFailed',
    );
    expect(
      await refused(
        g.client.send(
          new CompleteMultipartUploadCommand({ Bucket: bucket, Key: 'm', UploadId: 'nope', MultipartUpload: { Parts: [{ PartNumber: 1, ETag: '"x"' }] } }),
        ),
      ),
    ).toBe('NoSuchUpload');
    expect(await received(bucket, before)).toEqual([]);
  });
});
