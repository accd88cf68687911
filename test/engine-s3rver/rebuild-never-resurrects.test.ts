/**
 * Rebuild never resurrects (issue 20), through the SDK and the operator API against the gateway
 * in workerd over six s3rver processes: an object deleted, and an object overwritten, before a
 * rebuild from the backends stay deleted and overwritten after it, while their old shards are
 * still on the backends (the collector waits out its grace delay first). Before, the deleted
 * object came back: HEAD 200, and once the collector removed its shards, GET 503 for ever.
 */
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { GatewayClient } from '../../cli/gateway-client.ts';
import type { S3rverProcess } from '../backends/s3rver-harness.ts';
import { bodyBytes } from './bytes.ts';
import { DEV_CREDENTIALS, disposeServers, gatewayConfig, shardKeys, startGateway, startServers, type Gateway } from './gateway-harness.ts';
import { parseShardKey } from '../../worker/format/shard-key.ts';

const MiB = 1024 * 1024;
let servers: S3rverProcess[] = [];
let gateway: Gateway | undefined;
let s3: S3Client;
let admin: GatewayClient;

beforeAll(async () => {
  servers = await startServers(6);
  gateway = await startGateway({ ...gatewayConfig(servers, { timeoutMs: 30_000 }), garbageGraceSeconds: 3600 });
  const endpoint = (await gateway.directUrl()).origin;
  s3 = gateway.client({ endpoint });
  admin = new GatewayClient({ endpoint, 'access-key-id': DEV_CREDENTIALS.accessKeyId, 'secret-access-key': DEV_CREDENTIALS.secretAccessKey }, {});
}, 180_000);

afterAll(async () => {
  await gateway?.dispose().catch(() => {});
  await disposeServers(servers);
}, 120_000);

test('delete, overwrite, collect, rebuild: the deleted stays gone, the new version is the one listed and read', async () => {
  await s3.send(new CreateBucketCommand({ Bucket: 'history' }));
  for (const key of ['deleted', 'overwritten', 'kept']) await s3.send(new PutObjectCommand({ Bucket: 'history', Key: key, Body: bodyBytes(`${key}-v1`, MiB) }));
  await s3.send(new DeleteObjectCommand({ Bucket: 'history', Key: 'deleted' }));
  await s3.send(new PutObjectCommand({ Bucket: 'history', Key: 'overwritten', Body: bodyBytes('overwritten-v2', MiB) }));
  const unitsOnDisk = new Set((await shardKeys(servers[0]!, 'history')).map((k) => parseShardKey(k)!.unitId));
  expect(unitsOnDisk.size, 'units with a shard on backend 0: the old versions are still there').toBeGreaterThanOrEqual(3);

  await admin.admin('collect', {});
  const rebuilt = (await admin.admin('rebuild', { bucket: 'history' })) as { restored: string[]; kept: string[]; retired: string[] };
  expect(rebuilt.restored, 'objects brought back by the rebuild').toEqual([]);
  expect(rebuilt.kept.sort()).toEqual(['kept', 'overwritten']);
  expect(rebuilt.retired.length, 'units of the deleted and the superseded version, ignored').toBe(2);

  await expect(s3.send(new HeadObjectCommand({ Bucket: 'history', Key: 'deleted' }))).rejects.toMatchObject({ $metadata: { httpStatusCode: 404 } });
  const listed = await s3.send(new ListObjectsV2Command({ Bucket: 'history' }));
  expect(listed.Contents?.map((o) => o.Key)).toEqual(['kept', 'overwritten']);
  const got = await s3.send(new GetObjectCommand({ Bucket: 'history', Key: 'overwritten' }));
  expect(Buffer.from(await got.Body!.transformToByteArray()).equals(bodyBytes('overwritten-v2', MiB))).toBe(true);
});
