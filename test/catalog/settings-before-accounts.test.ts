/**
 * Buckets stored before accounts (test/fixtures/catalog-settings-before-accounts: SQLite files
 * and shard files written by commit 24d4565's own code; see its generate.ts) open under this
 * release as the default account's: no `owner` row was ever written, none is needed. Their
 * settings keep the stamp the old release computed, so a fenced call from an isolate of that
 * release (a deploy in progress) acts instead of being answered stale; through the gate the
 * default account's key lists and reads them, the old policy still denies, and a key of another
 * account sees none of them and is refused.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import {
  DeleteObjectCommand,
  GetBucketAclCommand,
  GetBucketOwnershipControlsCommand,
  GetObjectAclCommand,
  GetObjectCommand,
  ListBucketsCommand,
  PutBucketOwnershipControlsCommand,
  PutObjectAclCommand,
  PutObjectCommand,
} from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { bucketOwner, DEFAULT_ACCOUNT } from '../../worker/model/account.ts';
import { ACCESS_KEY, SECRET } from '../auth/helpers/signers.ts';
import { sdk, type SignAs } from '../auth/mutation/bases.ts';
import { toRequest } from '../auth/mutation/wire.ts';
import { openCatalogFixture } from '../support/catalog-fixture.ts';
import { gateApp } from '../support/gate-app.ts';

const FIXTURE = new URL('../fixtures/catalog-settings-before-accounts/', import.meta.url);
const INSTANCES = ['__buckets__', 'bucket:media', 'bucket:plain'];
const POLICY = { k: 4, m: 2, blockSize: 4096, small: { threshold: 256, mode: 'inline' } };
const expected = JSON.parse(readFileSync(new URL('expected.json', FIXTURE), 'utf8')) as {
  settings: Record<string, { stamp: string; rows: Record<string, string | null> }>;
  objects: Record<string, { size: number; md5: string }>;
};
const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');
const ALT: SignAs = { accessKeyId: 'AKIDALTACCOUNT', secret: 'alt account secret' };
const CREDENTIALS = [
  { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET },
  { accessKeyId: ALT.accessKeyId!, secretAccessKey: ALT.secret!, account: 'alt' },
];

describe('buckets stored before accounts open as the default account’s', () => {
  it('their settings read back with no owner row and the stamp the old release computed', async () => {
    const { catalog } = await openCatalogFixture(FIXTURE, INSTANCES, POLICY);
    for (const bucket of ['media', 'plain']) {
      const now = await catalog.getBucketSettings(bucket);
      // Rows added since (the owner; Object Ownership and the ACL, issue 43) are absent, and the stamp is the one that release computed.
      expect(now.rows).toEqual({ ...expected.settings[bucket]!.rows, owner: null, ownership: null, acl: null });
      expect(now.stamp).toBe(expected.settings[bucket]!.stamp);
      expect(bucketOwner(now.rows.owner ?? null)).toBe(DEFAULT_ACCOUNT);
    }
    expect(expected.settings.media!.stamp).not.toBe(''); // the fixture has settings to stamp
  });

  it("a fenced call carrying the old release's stamp acts (an isolate of that release during a deploy)", async () => {
    const { catalog, store } = await openCatalogFixture(FIXTURE, INSTANCES, POLICY);
    const instance = catalog.namespace.instance('bucket:media').object;
    const ran = await instance.fenced(expected.settings.media!.stamp, 'removeManifest', ['media', 'a/coded.bin', undefined, 0]);
    expect(ran.stale).toBeUndefined();
    await expect(store.getObject('media', 'a/coded.bin', { conditions: {} })).rejects.toMatchObject({ code: 'NoSuchKey' });
  });

  it("through the gate: the default account's key lists and reads them under the old policy; another account's key is refused", async () => {
    const fixture = await openCatalogFixture(FIXTURE, INSTANCES, POLICY);
    const g = gateApp(undefined, CREDENTIALS, { catalog: fixture.catalog, backends: fixture.backends });
    const send = async (command: unknown, as: SignAs = {}) => g.send(toRequest(await sdk(command, as))!);
    const code = async (res: Response) => /<Code>([^<]+)<\/Code>/.exec(await res.text())?.[1];

    const mine = await send(new ListBucketsCommand({}));
    expect(mine.status).toBe(200);
    expect([...(await mine.text()).matchAll(/<Name>([^<]+)<\/Name>/g)].map((m) => m[1])).toEqual(['media', 'plain']);
    for (const [at, want] of Object.entries(expected.objects)) {
      const [bucket, key] = at.split(/\/(.*)/) as [string, string];
      const res = await send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      expect(res.status).toBe(200);
      const got = new Uint8Array(await res.arrayBuffer());
      expect({ at, size: got.length, md5: md5(got) }).toEqual({ at, ...want });
    }
    // The old policy still denies deletes under locked/.
    const denied = await send(new DeleteObjectCommand({ Bucket: 'media', Key: 'locked/inline.txt' }));
    expect([denied.status, await code(denied)]).toEqual([403, 'AccessDenied']);

    const theirs = await send(new ListBucketsCommand({}), ALT);
    expect(theirs.status).toBe(200);
    expect(await theirs.text()).not.toMatch(/<Name>/);
    for (const [bucket, key] of [
      ['plain', 'p.bin'],
      ['media', 'a/coded.bin'],
    ] as const) {
      const read = await send(new GetObjectCommand({ Bucket: bucket, Key: key }), ALT);
      expect([read.status, await code(read)]).toEqual([403, 'AccessDenied']);
      const write = await send(new PutObjectCommand({ Bucket: bucket, Key: 'from-alt', Body: 'x' }), ALT);
      expect([write.status, await code(write)]).toEqual([403, 'AccessDenied']);
    }
  });

  it('they are BucketOwnerEnforced (ACLs disabled) with no row written for it: the owner FULL_CONTROL alone, public ACLs refused, until the owner enables ACLs', async () => {
    const fixture = await openCatalogFixture(FIXTURE, INSTANCES, POLICY);
    const g = gateApp(undefined, CREDENTIALS, { catalog: fixture.catalog, backends: fixture.backends });
    const send = async (command: unknown, as: SignAs = {}) => g.send(toRequest(await sdk(command, as))!);
    const code = async (res: Response) => /<Code>([^<]+)<\/Code>/.exec(await res.text())?.[1];
    for (const bucket of ['media', 'plain']) {
      const controls = await send(new GetBucketOwnershipControlsCommand({ Bucket: bucket }));
      expect(await controls.text()).toContain('<ObjectOwnership>BucketOwnerEnforced</ObjectOwnership>');
      const acl = await (await send(new GetBucketAclCommand({ Bucket: bucket }))).text();
      expect([...acl.matchAll(/<Permission>([^<]+)<\/Permission>/g)].map((m) => m[1])).toEqual(['FULL_CONTROL']);
      expect(acl).toContain(`<ID>${DEFAULT_ACCOUNT}</ID>`);
    }
    const objectAcl = await (await send(new GetObjectAclCommand({ Bucket: 'plain', Key: 'p.bin' }))).text();
    expect([...objectAcl.matchAll(/<ID>([^<]+)<\/ID>/g)].map((m) => m[1])).toEqual([DEFAULT_ACCOUNT, DEFAULT_ACCOUNT]);
    const refused = await send(new PutObjectAclCommand({ Bucket: 'plain', Key: 'p.bin', ACL: 'public-read' }));
    expect([refused.status, await code(refused)]).toEqual([400, 'AccessControlListNotSupported']);
    // Enabling ACLs on an old bucket: its objects, written without an ACL, are the owner's alone, so nothing opens by itself.
    await send(new PutBucketOwnershipControlsCommand({ Bucket: 'plain', OwnershipControls: { Rules: [{ ObjectOwnership: 'ObjectWriter' }] } }));
    const read = await send(new GetObjectCommand({ Bucket: 'plain', Key: 'p.bin' }), ALT);
    expect([read.status, await code(read)]).toEqual([403, 'AccessDenied']);
    const granted = await send(new PutObjectAclCommand({ Bucket: 'plain', Key: 'p.bin', GrantRead: 'id="alt"' }));
    expect(granted.status).toBe(200);
    const now = await send(new GetObjectCommand({ Bucket: 'plain', Key: 'p.bin' }), ALT);
    expect(now.status).toBe(200);
    expect(md5(new Uint8Array(await now.arrayBuffer()))).toBe(expected.objects['plain/p.bin']!.md5);
  });
});
