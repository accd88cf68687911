/**
 * Object Lock end to end (issue 25), through the SDK and the operator API against the gateway in
 * workerd over six s3rver processes, with no garbage grace (a collection deletes at once whatever
 * it is handed): a COMPLIANCE-locked version survives DeleteObject by version id (bypass or not),
 * DeleteObjects, an overwrite (a new version; the locked one stays), a delete marker, `collect`
 * and `rebuild`, and reads back byte for byte; its shards stay on the backends. Retention and
 * legal hold round-trip, and are echoed on HEAD.
 * Backend 0 is configured `"objectLock": true` and sits behind a double that enforces S3 Object
 * Lock retention (retention-double.ts; s3rver has none): the locked version's shard there gets
 * the version's COMPLIANCE retention, and deleting it with the gateway's own backend code and
 * credentials fails.
 */
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  GetObjectLegalHoldCommand,
  GetObjectRetentionCommand,
  HeadObjectCommand,
  ListObjectVersionsCommand,
  PutObjectCommand,
  PutObjectLegalHoldCommand,
  PutObjectRetentionCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { GatewayClient } from '../../cli/gateway-client.ts';
import type { S3rverProcess } from '../backends/s3rver-harness.ts';
import { bodyBytes } from './bytes.ts';
import { S3Backend, type S3BackendOptions } from '../../backends/s3.ts';
import { startRetentionDouble, type RetentionDouble } from './retention-double.ts';
import { DEV_CREDENTIALS, disposeServers, gatewayConfig, shardKeys, startGateway, startServers, type Gateway } from './gateway-harness.ts';

const MiB = 1024 * 1024;
let servers: S3rverProcess[] = [];
let gateway: Gateway | undefined;
let s3: S3Client;
let admin: GatewayClient;
let double: RetentionDouble | undefined;
let lockedBackend: S3BackendOptions;

beforeAll(async () => {
  servers = await startServers(6);
  double = await startRetentionDouble(new URL(servers[0]!.endpoint));
  const config = gatewayConfig(servers, { timeoutMs: 30_000 }) as { backends: S3BackendOptions[] };
  lockedBackend = { ...config.backends[0]!, endpoint: double.url.origin, objectLock: true };
  config.backends[0] = lockedBackend;
  gateway = await startGateway({ ...config, garbageGraceSeconds: 0 });
  const endpoint = (await gateway.directUrl()).origin;
  s3 = gateway.client({ endpoint });
  admin = new GatewayClient({ endpoint, 'access-key-id': DEV_CREDENTIALS.accessKeyId, 'secret-access-key': DEV_CREDENTIALS.secretAccessKey }, {});
}, 180_000);

afterAll(async () => {
  await gateway?.dispose().catch(() => {});
  await double?.close();
  await disposeServers(servers);
}, 120_000);

const denied = { name: 'AccessDenied', $metadata: { httpStatusCode: 403 } };

test('a COMPLIANCE-locked version survives every way of deleting it, collect and rebuild', async () => {
  const Bucket = 'vault';
  await s3.send(new CreateBucketCommand({ Bucket, ObjectLockEnabledForBucket: true }));
  const retainUntil = new Date(Math.ceil((Date.now() + 86_400_000) / 1000) * 1000);
  const v1 = bodyBytes('locked-v1', MiB);
  const put = await s3.send(
    new PutObjectCommand({ Bucket, Key: 'doc', Body: v1, ObjectLockMode: 'COMPLIANCE', ObjectLockRetainUntilDate: retainUntil, ChecksumAlgorithm: 'CRC32' }),
  );
  const id = put.VersionId!;
  const unitsAfterPut = (await shardKeys(servers[0]!, Bucket)).length;
  expect(unitsAfterPut, 'a shard of the locked version on backend 0').toBeGreaterThan(0);

  // Retention and legal hold round-trip, and HEAD echoes them.
  const retention = await s3.send(new GetObjectRetentionCommand({ Bucket, Key: 'doc', VersionId: id }));
  expect(retention.Retention).toEqual({ Mode: 'COMPLIANCE', RetainUntilDate: retainUntil });
  await s3.send(new PutObjectLegalHoldCommand({ Bucket, Key: 'doc', VersionId: id, LegalHold: { Status: 'ON' } }));
  expect((await s3.send(new GetObjectLegalHoldCommand({ Bucket, Key: 'doc', VersionId: id }))).LegalHold).toEqual({ Status: 'ON' });
  const head = await s3.send(new HeadObjectCommand({ Bucket, Key: 'doc' }));
  expect([head.ObjectLockMode, head.ObjectLockRetainUntilDate, head.ObjectLockLegalHoldStatus]).toEqual(['COMPLIANCE', retainUntil, 'ON']);
  await s3.send(new PutObjectLegalHoldCommand({ Bucket, Key: 'doc', VersionId: id, LegalHold: { Status: 'OFF' } }));
  expect((await s3.send(new GetObjectLegalHoldCommand({ Bucket, Key: 'doc', VersionId: id }))).LegalHold).toEqual({ Status: 'OFF' });

  // Retention cannot be shortened nor turned into GOVERNANCE, bypass or not.
  const shorter = { Mode: 'COMPLIANCE' as const, RetainUntilDate: new Date(retainUntil.getTime() - 3_600_000) };
  await expect(
    s3.send(new PutObjectRetentionCommand({ Bucket, Key: 'doc', VersionId: id, Retention: shorter, BypassGovernanceRetention: true })),
  ).rejects.toMatchObject(denied);
  await expect(
    s3.send(new PutObjectRetentionCommand({ Bucket, Key: 'doc', VersionId: id, Retention: { Mode: 'GOVERNANCE', RetainUntilDate: retainUntil } })),
  ).rejects.toMatchObject(denied);

  // No delete by version id, with bypass or not, alone or in a DeleteObjects.
  await expect(s3.send(new DeleteObjectCommand({ Bucket, Key: 'doc', VersionId: id }))).rejects.toMatchObject(denied);
  await expect(s3.send(new DeleteObjectCommand({ Bucket, Key: 'doc', VersionId: id, BypassGovernanceRetention: true }))).rejects.toMatchObject(denied);
  const many = await s3.send(new DeleteObjectsCommand({ Bucket, BypassGovernanceRetention: true, Delete: { Objects: [{ Key: 'doc', VersionId: id }] } }));
  expect(many.Errors?.map((e) => [e.Key, e.VersionId, e.Code])).toEqual([['doc', id, 'AccessDenied']]);
  expect(many.Deleted ?? []).toEqual([]);

  // Overwrite: a new version; then a delete marker (allowed, as S3).
  const v2 = await s3.send(new PutObjectCommand({ Bucket, Key: 'doc', Body: bodyBytes('locked-v2', MiB) }));
  expect(v2.VersionId).not.toBe(id);
  const marker = await s3.send(new DeleteObjectCommand({ Bucket, Key: 'doc' }));
  expect(marker.DeleteMarker).toBe(true);

  await admin.admin('collect', {});
  const rebuilt = (await admin.admin('rebuild', { bucket: Bucket })) as { restored: string[] };
  expect(rebuilt.restored, 'nothing lost, nothing to restore').toEqual([]);
  await admin.admin('collect', {});

  const versions = await s3.send(new ListObjectVersionsCommand({ Bucket }));
  expect(versions.Versions?.map((v) => v.VersionId)).toEqual([v2.VersionId, id]);
  const got = await s3.send(new GetObjectCommand({ Bucket, Key: 'doc', VersionId: id }));
  expect(Buffer.from(await got.Body!.transformToByteArray()).equals(v1), 'the locked version reads back byte for byte').toBe(true);
  expect(got.ObjectLockMode).toBe('COMPLIANCE');
  expect((await shardKeys(servers[0]!, Bucket)).length, 'shard files on backend 0 after collection').toBeGreaterThanOrEqual(unitsAfterPut);
}, 120_000);

test("a backend with Object Lock retains the shards of a COMPLIANCE version: the gateway's own credentials cannot delete them", async () => {
  const Bucket = 'retained';
  await s3.send(new CreateBucketCommand({ Bucket, ObjectLockEnabledForBucket: true }));
  const retainUntil = new Date(Math.ceil((Date.now() + 2 * 86_400_000) / 1000) * 1000);
  const before = new Set(double!.retained.keys());
  await s3.send(
    new PutObjectCommand({
      Bucket,
      Key: 'doc',
      Body: bodyBytes('retained', MiB),
      ObjectLockMode: 'COMPLIANCE',
      ObjectLockRetainUntilDate: retainUntil,
      ChecksumAlgorithm: 'CRC32',
    }),
  );
  const mine = [...double!.retained.entries()].filter(([path]) => !before.has(path));
  expect(mine.length, 'shards of the version on backend 0 given a retention').toBeGreaterThan(0);
  for (const [, until] of mine) expect(until).toEqual(retainUntil);

  const onDisk = await shardKeys(servers[0]!, Bucket);
  const key = onDisk.find((k) => mine.some(([path]) => path.endsWith('/' + k)))!;
  expect(key, 'a retained shard is stored on backend 0').toBeDefined();
  // The gateway's own backend code and credentials, straight at the backend.
  const direct = new S3Backend({ ...lockedBackend, retries: 0 });
  await expect(direct.delete(key)).rejects.toThrow(/HTTP 403 AccessDenied/);
  expect(await shardKeys(servers[0]!, Bucket)).toContain(key);
  expect(double!.refused).toContain(`DELETE ${mine.find(([path]) => path.endsWith('/' + key))![0]}`);

  // A GOVERNANCE version is not mirrored (a bypass would strand its shards at the backend).
  const count = double!.retained.size;
  await s3.send(
    new PutObjectCommand({
      Bucket,
      Key: 'gov',
      Body: bodyBytes('gov', MiB),
      ObjectLockMode: 'GOVERNANCE',
      ObjectLockRetainUntilDate: retainUntil,
      ChecksumAlgorithm: 'CRC32',
    }),
  );
  expect(double!.retained.size).toBe(count);
}, 60_000);

test('GOVERNANCE: deleted by version id only with x-amz-bypass-governance-retention', async () => {
  const Bucket = 'governed';
  await s3.send(new CreateBucketCommand({ Bucket, ObjectLockEnabledForBucket: true }));
  const put = await s3.send(
    new PutObjectCommand({
      Bucket,
      Key: 'doc',
      Body: 'abc',
      ObjectLockMode: 'GOVERNANCE',
      ObjectLockRetainUntilDate: new Date(Date.now() + 86_400_000),
      ChecksumAlgorithm: 'CRC32',
    }),
  );
  await expect(s3.send(new DeleteObjectCommand({ Bucket, Key: 'doc', VersionId: put.VersionId }))).rejects.toMatchObject(denied);
  const done = await s3.send(new DeleteObjectCommand({ Bucket, Key: 'doc', VersionId: put.VersionId, BypassGovernanceRetention: true }));
  expect(done.VersionId).toBe(put.VersionId);
  expect((await s3.send(new ListObjectVersionsCommand({ Bucket }))).Versions ?? []).toEqual([]);
}, 60_000);
