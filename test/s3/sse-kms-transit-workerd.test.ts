/**
 * SSE-KMS under a Vault-backed key in workerd (issue 43): the real Worker (worker/index.ts over
 * six local R2 buckets, test/s3/harness.ts's engine config) with a transit key pointing at the
 * transit API double (test/support/transit-server.ts) in this process, so the transit client's
 * fetch, its abort and its error mapping run in the Workers runtime, not only in Node
 * (test/s3/sse-kms-transit.test.ts has the rest). About 6 s, most of it the Worker's start.
 */
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CREDENTIALS, ENGINE_CONFIG, s3Client } from './harness.ts';
import { TEST_ENCRYPTION } from '../support/dev-encryption.ts';
import { LOCAL_DEV, ROOT, runWorker, type RunningWorker } from '../support/worker.ts';
import { startTransitServer, type TransitDouble } from '../support/transit-server.ts';

const TOKEN = 'hvs.workerd-test-token';
const BODY = 'w'.repeat(200_000);
describe('a Vault-backed KMS key in workerd', () => {
  let vault: TransitDouble;
  let worker: RunningWorker;

  beforeAll(async () => {
    vault = await startTransitServer({ token: TOKEN });
    vault.createKey('shardgate');
    const transit = (id: string, key: string) => ({ id, transit: { address: vault.address, key, tokenSecret: 'VAULT_TOKEN' } });
    const config = {
      ...ENGINE_CONFIG,
      credentials: [{ ...CREDENTIALS }],
      encryption: { ...TEST_ENCRYPTION, kmsKeys: [transit('vaulted', 'shardgate'), transit('denied', 'denied-key'), transit('cut', 'cut-key')] },
    };
    worker = await runWorker(
      join(ROOT, 'test/s3/fixtures/worker-engine.ts'),
      { prefix: 'shardgate-transit-' },
      {
        config: join(ROOT, 'wrangler.toml'),
        bindings: {
          ...LOCAL_DEV,
          SHARDGATE_CONFIG: { type: 'plain_text', value: JSON.stringify(config) },
          VAULT_TOKEN: { type: 'plain_text', value: TOKEN },
        },
        persist: true,
      },
    );
  });

  afterAll(async () => {
    await worker?.dispose();
    await vault?.close();
  });

  it('writes and reads under the key (one Vault encrypt, one decrypt); a refusing Vault gives KMS.KMSInvalidStateException, an unreachable one 503', async () => {
    const s3 = s3Client(worker.url);
    const send = async (command: PutObjectCommand | GetObjectCommand) =>
      s3.send(command as never).then(
        (r: { $metadata: { httpStatusCode?: number }; Body?: { transformToString(): Promise<string> }; SSEKMSKeyId?: string }) => r,
        (e: { name: string; $metadata?: { httpStatusCode?: number } }) => ({ error: e.name, status: e.$metadata?.httpStatusCode }),
      );
    expect((await s3.send(new CreateBucketCommand({ Bucket: 'transit-bucket' }))).$metadata.httpStatusCode).toBe(200);
    const put = await send(new PutObjectCommand({ Bucket: 'transit-bucket', Key: 'o', Body: BODY, ServerSideEncryption: 'aws:kms', SSEKMSKeyId: 'vaulted' }));
    expect(put).toMatchObject({ SSEKMSKeyId: 'arn:aws:kms:us-east-1:000000000000:key/vaulted' });
    const got = (await send(new GetObjectCommand({ Bucket: 'transit-bucket', Key: 'o' }))) as { Body: { transformToString(): Promise<string> } };
    expect(await got.Body.transformToString()).toBe(BODY);
    expect([vault.calls.encrypt, vault.calls.decrypt]).toEqual([1, 1]);
    // A key whose transit key Vault does not have: refused (Vault's 403 on encrypt under an update-only policy).
    expect(
      await send(new PutObjectCommand({ Bucket: 'transit-bucket', Key: 'd', Body: BODY, ServerSideEncryption: 'aws:kms', SSEKMSKeyId: 'denied' })),
    ).toEqual({
      error: 'KMS.KMSInvalidStateException',
      status: 400,
    });
    // Vault unreachable, for a key this isolate never used: 503.
    vault.mode = 'refuse';
    expect(await send(new PutObjectCommand({ Bucket: 'transit-bucket', Key: 'c', Body: BODY, ServerSideEncryption: 'aws:kms', SSEKMSKeyId: 'cut' }))).toEqual({
      error: 'ServiceUnavailable',
      status: 503,
    });
    vault.mode = 'normal';
  });
});
