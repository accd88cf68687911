/**
 * PutBucketLogging's target is a write of the signer's (issue 37): the outside review made a key
 * scoped to its own buckets have the gateway write log objects into another tenant's bucket,
 * past that bucket's policy denying every write and into a bucket whose COMPLIANCE default
 * retention made the log objects impossible to remove. Now the signer needs `write` on the target
 * under the prefix, the target's policy must not deny it s3:PutObject, a target with a default
 * retention is InvalidTargetBucketForLogging, and delivery checks the target's policy and lock
 * again before each log object.
 */
import { PutBucketLoggingCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CLAIM_MS } from '../../worker/catalog/sql-access-log.ts';
import { formatAccessLogRecord } from '../../worker/model/access-log-record.ts';
import { AccessLogDelivery, sourceBuckets } from '../../worker/upkeep/access-log.ts';
import { loggingApp, REGION } from './harness.ts';

const TENANT = { accessKeyId: 'AKIDTENANTA', secret: 'tenant a secret' };
const BOTH = { accessKeyId: 'AKIDBOTH', secret: 'both secret' };
const PREFIXED = { accessKeyId: 'AKIDPREFIXED', secret: 'prefixed secret' };
const LOGGING = 'logging.s3.amazonaws.com';
const codeOf = (text: string) => /<Code>([^<]+)<\/Code>/.exec(text)?.[1];
const denyPut = (bucket: string, principal: unknown = '*') =>
  JSON.stringify({
    Version: '2012-10-17',
    Statement: [{ Effect: 'Deny', Principal: principal, Action: 's3:PutObject', Resource: `arn:aws:s3:::${bucket}/*` }],
  });

async function setup() {
  const g = loggingApp({
    rollMs: 3_600_000,
    credentials: [
      { accessKeyId: TENANT.accessKeyId, secretAccessKey: TENANT.secret, scope: { buckets: ['a-*'], actions: ['read', 'list', 'write', 'delete'] } },
      { accessKeyId: BOTH.accessKeyId, secretAccessKey: BOTH.secret, scope: { buckets: ['a-*', 'b-*'], actions: ['read', 'list', 'write', 'delete'] } },
      {
        accessKeyId: PREFIXED.accessKeyId,
        secretAccessKey: PREFIXED.secret,
        scope: [
          { buckets: ['a-src'], actions: ['write'] },
          { buckets: ['a-logs'], prefixes: ['logs/'], actions: ['write'] },
        ],
      },
    ],
  });
  await g.store.createBucket('a-src', { region: REGION });
  await g.store.createBucket('a-logs', { region: REGION });
  await g.store.createBucket('b-victim', { region: REGION });
  await g.store.createBucket('b-locked', { region: REGION, objectLock: true });
  await g.store.config.putObjectLockConfiguration('b-locked', { mode: 'COMPLIANCE', days: 3650 });
  const enable = (as: typeof TENANT, target: string, prefix = 'logs/') =>
    g.command(new PutBucketLoggingCommand({ Bucket: 'a-src', BucketLoggingStatus: { LoggingEnabled: { TargetBucket: target, TargetPrefix: prefix } } }), as);
  return { g, enable };
}

afterEach(() => void vi.useRealTimers());

describe('PutBucketLogging checks its target', () => {
  it("a key scoped to its own buckets cannot name another tenant's bucket, nor a prefix outside its grant", async () => {
    const { g, enable } = await setup();
    let res = await enable(TENANT, 'b-victim');
    expect(res.status).toBe(403);
    expect(codeOf(await res.text())).toBe('AccessDenied');
    res = await enable(PREFIXED, 'a-logs', 'other/');
    expect(codeOf(await res.text())).toBe('AccessDenied');
    expect(await g.catalog.getBucketLogging('a-src')).toBeNull();
    expect((await enable(PREFIXED, 'a-logs', 'logs/tenant-a/')).status).toBe(200);
    expect((await enable(TENANT, 'a-logs')).status).toBe(200);
  });

  it("the target's policy: a Deny of s3:PutObject for the signer (or everyone) refuses it", async () => {
    const { g, enable } = await setup();
    await g.store.config.putBucketPolicy('b-victim', denyPut('b-victim', { AWS: [BOTH.accessKeyId] }));
    const res = await enable(BOTH, 'b-victim');
    expect(codeOf(await res.text())).toBe('AccessDenied');
    expect(await g.catalog.getBucketLogging('a-src')).toBeNull();
    await g.store.config.putBucketPolicy('b-victim', denyPut('b-victim', { AWS: ['someone-else'] }));
    expect((await enable(BOTH, 'b-victim')).status).toBe(200);
  });

  it('a target with a default Object Lock retention is InvalidTargetBucketForLogging', async () => {
    const { g, enable } = await setup();
    const res = await enable(BOTH, 'b-locked');
    expect(res.status).toBe(400);
    expect(codeOf(await res.text())).toBe('InvalidTargetBucketForLogging');
    expect(await g.catalog.getBucketLogging('a-src')).toBeNull();
  });

  it('delivery writes nothing into a target whose policy or lock came to forbid it, and delivers once that is lifted', async () => {
    const { g, enable } = await setup();
    expect((await enable(BOTH, 'b-victim')).status).toBe(200);
    expect((await g.command(new PutObjectCommand({ Bucket: 'a-src', Key: 'k', Body: 'x' }), BOTH)).status).toBe(200);
    await g.settle();
    await g.store.config.putBucketPolicy('b-victim', denyPut('b-victim'));
    const roll = () => new AccessLogDelivery({ catalog: g.catalog, store: g.store, rollMs: 0, log: (l) => g.logs.push(l) }).deliverDue('b-victim');
    expect(await roll()).toBe(0);
    expect(g.logs).toContainEqual(expect.objectContaining({ outcome: 'withheld', target: 'b-victim' }));
    const listed = async () => (await g.store.listObjects('b-victim', { prefix: '', delimiter: null, startAfter: null, maxKeys: 10 })).objects.length;
    expect(await listed()).toBe(0);
    await g.store.config.deleteBucketPolicy('b-victim');
    // The withheld batch stays claimed; a check after the claim's time delivers it.
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + CLAIM_MS + 1000);
    expect(await roll()).toBe(1);
    expect(await listed()).toBe(1);
  });

  it("delivery is judged as S3 server access logging's service principal, with the batch's source bucket and account", async () => {
    const { g, enable } = await setup();
    expect((await enable(BOTH, 'b-victim')).status).toBe(200);
    expect((await g.command(new PutObjectCommand({ Bucket: 'a-src', Key: 'k', Body: 'x' }), BOTH)).status).toBe(200);
    await g.settle();
    const roll = () => new AccessLogDelivery({ catalog: g.catalog, store: g.store, rollMs: 0, log: (l) => g.logs.push(l) }).deliverDue('b-victim');
    const statement = (service: string, condition?: unknown) => ({
      Effect: 'Deny',
      Principal: { Service: service },
      Action: 's3:PutObject',
      Resource: 'arn:aws:s3:::b-victim/*',
      ...(condition ? { Condition: condition } : {}),
    });
    const policy = (...statements: unknown[]) => JSON.stringify({ Version: '2012-10-17', Statement: statements });
    const later = () => {
      vi.useFakeTimers({ toFake: ['Date'] });
      vi.setSystemTime(Date.now() + CLAIM_MS + 1000); // the withheld batch's claim runs out
    };
    // Refusing the service for this source, or outright, withholds the log.
    for (const deny of [statement(LOGGING, { ArnLike: { 'aws:SourceArn': 'arn:aws:s3:::a-src' } }), statement(LOGGING)]) {
      await g.store.config.putBucketPolicy('b-victim', policy(deny));
      later();
      expect(await roll()).toBe(0);
      expect(g.logs.at(-1)).toEqual(expect.objectContaining({ outcome: 'withheld', why: expect.stringContaining(`${LOGGING} (records of a-src)`) }));
    }
    // What AWS users write to harden a log bucket (refuse the service for any other account or
    // source) passes this account's own source; a Deny of another service does not apply.
    const hardened = policy(
      statement(LOGGING, { StringNotEquals: { 'aws:SourceAccount': 'shardgate' } }),
      statement(LOGGING, { ArnNotLike: { 'aws:SourceArn': 'arn:aws:s3:::a-*' } }),
      statement('cloudtrail.amazonaws.com'),
    );
    await g.store.config.putBucketPolicy('b-victim', hardened);
    later();
    expect(await roll()).toBe(1);
  });

  it("the source buckets of a batch are its records' bucket fields", () => {
    const record = (bucket: string, key: string) =>
      `${formatAccessLogRecord({
        ...{ bucket, time: new Date(), remoteIp: '127.0.0.1', requester: null, requestId: 'R', operation: 'REST.PUT.OBJECT', key, method: 'PUT' },
        ...{ uri: `/${bucket}/${key}`, status: 200, errorCode: null, bytesSent: null, objectSize: 1, totalMs: 1, turnAroundMs: 1, referer: null },
        ...{ userAgent: 'a b c', versionId: null, hostId: null, sigVersion: 'SigV4', cipherSuite: null, authType: 'AuthHeader', host: 'h', tlsVersion: null },
      })}\n`;
    const body = record('a-src', 'k') + record('a-two', 'a key with spaces') + record('a-src', 'x');
    expect(sourceBuckets(body)).toEqual(['a-src', 'a-two']);
    expect(sourceBuckets('')).toEqual([]);
  });

  it('delivery writes nothing into a target with a default retention (a configuration stored before these checks)', async () => {
    const { g } = await setup();
    await g.store.config.putBucketLogging('a-src', { targetBucket: 'b-locked', targetPrefix: 'logs/', partitioned: null });
    expect((await g.command(new PutObjectCommand({ Bucket: 'a-src', Key: 'k', Body: 'x' }), BOTH)).status).toBe(200);
    await g.settle();
    expect(await new AccessLogDelivery({ catalog: g.catalog, store: g.store, rollMs: 0, log: (l) => g.logs.push(l) }).deliverDue('b-locked')).toBe(0);
    expect(g.logs).toContainEqual(expect.objectContaining({ outcome: 'withheld', target: 'b-locked', why: expect.stringContaining('Object Lock') }));
    expect((await g.store.listObjects('b-locked', { prefix: '', delimiter: null, startAfter: null, maxKeys: 10 })).objects).toEqual([]);
  });
});
