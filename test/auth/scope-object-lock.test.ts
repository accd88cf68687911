/**
 * Object Lock needs its own actions in a key's scope (issue 37). The outside review found that any
 * key with write on an object could remove its legal hold and then delete the version, set
 * COMPLIANCE retention until year 9999 on versions others wrote, and (with read, list, write and
 * delete on the bucket) bypass GOVERNANCE retention. Now PutObjectLegalHold and the legal-hold
 * header need `legal-hold`, PutObjectRetention and the retention headers `retention`, the bypass
 * header `bypass-governance`, each granted explicitly; a bucket policy can deny each IAM action;
 * and retention is bounded by s3.maxRetentionDays. Requests signed by @aws-sdk/client-s3, through
 * the real gate and front door (gate-app.ts).
 */
import {
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  PutObjectCommand,
  PutObjectLegalHoldCommand,
  PutObjectRetentionCommand,
} from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import type { Action } from '../../worker/model/access.ts';
import { gateApp } from '../support/gate-app.ts';
import { sdk } from './mutation/bases.ts';
import { toRequest } from './mutation/wire.ts';

const VAULT = 'vault';
const key = (id: string, actions: Action[]) => ({ accessKeyId: id, secret: `${id} secret`, actions });
const WRITER = key('AKIDWRITER', ['read', 'list', 'write', 'delete']); // the whole bucket: before, this implied the bypass
const HOLDER = key('AKIDHOLDER', ['read', 'write', 'legal-hold', 'retention']);
const BYPASSER = key('AKIDBYPASSER', ['read', 'delete', 'bypass-governance']);
const KEYS = [WRITER, HOLDER, BYPASSER];
const DAY = 86_400_000;
const codeOf = (text: string) => /<Code>([^<]+)<\/Code>/.exec(text)?.[1] ?? 'none';

async function lockedSetup() {
  const g = gateApp(
    undefined,
    KEYS.map((k) => ({ accessKeyId: k.accessKeyId, secretAccessKey: k.secret, scope: { buckets: [VAULT], actions: k.actions } })),
  );
  await g.store.createBucket(VAULT, { region: 'us-east-1', objectLock: true });
  const put = async (k: string, objectLock?: object) =>
    (
      await g.store.putObject(VAULT, k, new Response('locked body').body!, {
        contentLength: 11,
        contentMD5: null,
        metadata: { user: {}, ...(objectLock ? { objectLock } : {}) },
        checksum: null,
        conditions: {},
      })
    ).versionId!;
  const send = async (command: unknown, as: (typeof KEYS)[number]) => {
    const res = await g.send(toRequest(await sdk(command, as))!);
    return { status: res.status, code: codeOf(await res.text()) };
  };
  return { g, put, send };
}

describe('Object Lock actions in key scopes', () => {
  it('a legal hold is removed only with legal-hold; write alone cannot remove it and delete the version', async () => {
    const { g, put, send } = await lockedSetup();
    const versionId = await put('held', { legalHold: 'ON' });
    expect(await send(new PutObjectLegalHoldCommand({ Bucket: VAULT, Key: 'held', VersionId: versionId, LegalHold: { Status: 'OFF' } }), WRITER)).toMatchObject(
      { status: 403, code: 'AccessDenied' },
    );
    expect(await send(new DeleteObjectCommand({ Bucket: VAULT, Key: 'held', VersionId: versionId }), WRITER)).toMatchObject({ status: 403 });
    expect(await g.store.getObjectLegalHold(VAULT, 'held', versionId)).toBe('ON');
    expect((await send(new PutObjectLegalHoldCommand({ Bucket: VAULT, Key: 'held', VersionId: versionId, LegalHold: { Status: 'OFF' } }), HOLDER)).status).toBe(
      200,
    );
    expect(await g.store.getObjectLegalHold(VAULT, 'held', versionId)).toBe('OFF');
  });

  it('retention is set only with retention, and COMPLIANCE never past the maximum (year 9999 refused)', async () => {
    const { g, put, send } = await lockedSetup();
    const versionId = await put('theirs');
    const retention = (until: Date) =>
      new PutObjectRetentionCommand({ Bucket: VAULT, Key: 'theirs', VersionId: versionId, Retention: { Mode: 'COMPLIANCE', RetainUntilDate: until } });
    expect(await send(retention(new Date(Date.now() + 2 * DAY)), WRITER)).toMatchObject({ status: 403, code: 'AccessDenied' });
    expect(await send(retention(new Date('9999-12-31T00:00:00Z')), HOLDER)).toMatchObject({ status: 400, code: 'InvalidArgument' });
    await expect(g.store.getObjectRetention(VAULT, 'theirs', versionId)).rejects.toMatchObject({ code: 'NoSuchObjectLockConfiguration' });
    expect((await send(retention(new Date(Date.now() + 2 * DAY)), HOLDER)).status).toBe(200);
    // Past the maximum, GOVERNANCE is AWS's answer: a key with bypass-governance can lift it.
    const governed = await put('governed');
    const far = (Mode: 'GOVERNANCE' | 'COMPLIANCE') =>
      new PutObjectRetentionCommand({
        Bucket: VAULT,
        Key: 'governed',
        VersionId: governed,
        Retention: { Mode, RetainUntilDate: new Date('2140-01-01T00:00:00Z') },
      });
    expect(await send(far('COMPLIANCE'), HOLDER)).toMatchObject({ status: 400, code: 'InvalidArgument' });
    expect((await send(far('GOVERNANCE'), HOLDER)).status).toBe(200);
    expect(await g.store.getObjectRetention(VAULT, 'governed', governed)).toEqual({ mode: 'GOVERNANCE', retainUntil: '2140-01-01T00:00:00.000Z' });
  });

  it('lock headers on PutObject, CopyObject and CreateMultipartUpload need the matching action', async () => {
    const { g, put, send } = await lockedSetup();
    await put('source');
    const until = new Date(Date.now() + 2 * DAY);
    const retained = { ObjectLockMode: 'COMPLIANCE' as const, ObjectLockRetainUntilDate: until };
    const held = { ObjectLockLegalHoldStatus: 'ON' as const };
    for (const lock of [retained, held]) {
      expect(await send(new PutObjectCommand({ Bucket: VAULT, Key: 'new', Body: 'x', ...lock }), WRITER), JSON.stringify(lock)).toMatchObject({
        status: 403,
        code: 'AccessDenied',
      });
      expect(await send(new CopyObjectCommand({ Bucket: VAULT, Key: 'copy', CopySource: `${VAULT}/source`, ...lock }), WRITER)).toMatchObject({
        status: 403,
        code: 'AccessDenied',
      });
      expect(await send(new CreateMultipartUploadCommand({ Bucket: VAULT, Key: 'mpu', ...lock }), WRITER)).toMatchObject({ status: 403, code: 'AccessDenied' });
      expect((await send(new PutObjectCommand({ Bucket: VAULT, Key: 'new', Body: 'x', ...lock }), HOLDER)).status).toBe(200);
    }
    await expect(g.store.headObject(VAULT, 'copy', { conditions: {} })).rejects.toMatchObject({ code: 'NoSuchKey' });
    expect((await send(new PutObjectCommand({ Bucket: VAULT, Key: 'plain', Body: 'x' }), WRITER)).status).toBe(200); // no lock headers: write is enough
  });

  it('GOVERNANCE is bypassed only with bypass-governance (not by every other action on the bucket), and not past a policy Deny', async () => {
    const { g, put, send } = await lockedSetup();
    const governed = { mode: 'GOVERNANCE', retainUntil: new Date(Date.now() + 2 * DAY).toISOString() };
    const v1 = await put('gov', governed);
    const v2 = await put('gov2', governed);
    const del = (k: string, v: string) => new DeleteObjectCommand({ Bucket: VAULT, Key: k, VersionId: v, BypassGovernanceRetention: true });
    expect(await send(del('gov', v1), WRITER)).toMatchObject({ status: 403, code: 'AccessDenied' });
    const batch = async (as: (typeof KEYS)[number]) => {
      const res = await g.send(
        toRequest(
          await sdk(new DeleteObjectsCommand({ Bucket: VAULT, BypassGovernanceRetention: true, Delete: { Objects: [{ Key: 'gov2', VersionId: v2 }] } }), as),
        )!,
      );
      return res.text();
    };
    expect(await batch(WRITER)).toContain('<Code>AccessDenied</Code>');
    await g.store.config.putBucketPolicy(
      VAULT,
      JSON.stringify({ Statement: [{ Effect: 'Deny', Principal: '*', Action: 's3:BypassGovernanceRetention', Resource: `arn:aws:s3:::${VAULT}/gov` }] }),
    );
    expect(await send(del('gov', v1), BYPASSER)).toMatchObject({ status: 403, code: 'AccessDenied' });
    await g.store.config.deleteBucketPolicy(VAULT);
    expect((await send(del('gov', v1), BYPASSER)).status).toBe(204);
    expect(await batch(BYPASSER)).toContain('<Deleted>');
  });
});
