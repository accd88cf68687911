/// <reference types="@cloudflare/vitest-pool-workers/types" />
// The catalog contract against DurableCatalog inside workerd, on the CATALOG Durable Object
// binding of wrangler.toml (CatalogObject, SQLite storage), plus what only the Durable Object
// can get wrong: S3 errors surviving RPC, and a deleted bucket's instance really being freed.

import { runInDurableObject } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { CatalogObject } from '../../worker/catalog/durable-object.ts';
import { DurableCatalog } from '../../worker/catalog/durable-catalog.ts';
import { S3Error } from '../../worker/model/errors.ts';
import { requestFence, type BucketSettings, type SettingsFence } from '../../worker/model/bucket-settings.ts';
import { SCHEMA_VERSION } from '../../worker/catalog/sql-schema.ts';
import { runCatalogContract } from './contract.ts';
import { manifest, unit } from './fixtures.ts';

function namespace(): DurableObjectNamespace<CatalogObject> {
  const ns = (env as unknown as { CATALOG?: DurableObjectNamespace<CatalogObject> }).CATALOG;
  if (!ns) throw new Error('no CATALOG binding: wrangler.toml must declare the CatalogObject Durable Object');
  return ns;
}

runCatalogContract('durable object (workerd)', (options) => new DurableCatalog(namespace(), options));

describe('CatalogObject', () => {
  it('a split bucket in workerd: the root pushes its settings to its partitions over the binding, keys land in their partition', async () => {
    const c = new DurableCatalog(namespace());
    const name = `split-${Date.now().toString(36)}`;
    await c.insertBucket(name, 'auto');
    const map = await c.splitBucketStatically(name, ['h', 'p']);
    await c.setVersioning(name, 'Enabled'); // reaches the partitions by the root's own call to them
    for (const key of ['a', 'k', 'z']) {
      await c.commitManifest(name, key, manifest(name, key), {});
      await c.commitManifest(name, key, manifest(name, key), {});
    }
    const listed = await c.listVersions(name, { prefix: '', delimiter: null, keyMarker: null, versionIdMarker: null, maxKeys: 100 });
    expect(listed.versions.map((v) => v.key)).toEqual(['a', 'a', 'k', 'k', 'z', 'z']);
    const upper = namespace().get(namespace().idFromName(map.ranges[2]!.instance));
    expect(await upper.dispatch('getManifest', [name, 'a'], undefined, { key: 'a', epoch: map.epoch })).toEqual({ moved: map.epoch });
    for (const key of ['a', 'k', 'z']) while (await c.getManifest(name, key)) await c.removeManifest(name, key);
  });

  it('an on-line split in workerd: the change log (triggers), the copy between objects, the commit at the root, writes going on meanwhile', async () => {
    const c = new DurableCatalog(namespace());
    const other = new DurableCatalog(namespace()); // another isolate: its map left stale
    const name = `online-${Date.now().toString(36)}`;
    await c.insertBucket(name, 'auto');
    await c.setVersioning(name, 'Enabled');
    const keys = Array.from({ length: 60 }, (_, i) => `k${String(i).padStart(3, '0')}`);
    for (const key of keys) await c.commitManifest(name, key, manifest(name, key), {});
    const writes = keys.filter((_, i) => i % 3 === 0).map((key) => other.commitManifest(name, key, manifest(name, key), {}));
    const map = (await c.splitPartition(name, 'k000'))!;
    await Promise.all(writes);
    expect(map.ranges.map((r) => r.low)).toEqual(['', 'k030']);
    const listed = await other.listVersions(name, { prefix: '', delimiter: null, keyMarker: null, versionIdMarker: null, maxKeys: 1000 });
    expect(listed.versions).toHaveLength(80);
    expect((await c.bucketHealth(name, new Date())).objects).toBe(80);
    const upper = namespace().get(namespace().idFromName(map.ranges[1]!.instance));
    const root = namespace().get(namespace().idFromName(map.ranges[0]!.instance));
    expect(await root.dispatch('getManifest', [name, 'k040'], undefined, { key: 'k040', epoch: map.epoch })).toEqual({ moved: map.epoch });
    expect(await upper.dispatch('getManifest', [name, 'k040'], undefined, { key: 'k040', epoch: map.epoch })).toMatchObject({ ok: { key: 'k040' } });
    await runInDurableObject(root, (_o, state) => {
      expect(state.storage.sql.exec("SELECT COUNT(*) AS n FROM versions WHERE key >= 'k030'").one().n).toBe(0);
      expect(state.storage.sql.exec("SELECT name FROM sqlite_master WHERE name LIKE 'split_%'").toArray()).toEqual([]);
    });
  });

  it('merges the split bucket back on line over the real binding: writes during it land, the upper partition is left owning nothing', async () => {
    const name = 'merged-online';
    const c = new DurableCatalog(namespace());
    const other = new DurableCatalog(namespace()); // a second isolate, its map stale after the merge
    await c.insertBucket(name, 'auto');
    await c.setVersioning(name, 'Enabled');
    const keys = Array.from({ length: 60 }, (_, i) => `k${String(i).padStart(3, '0')}`);
    for (const key of keys) await c.commitManifest(name, key, manifest(name, key), {});
    const split = (await c.splitPartition(name, 'k000'))!;
    await other.getPartitionMap(name);
    const writes = keys.filter((_, i) => i % 3 === 0).map((key) => other.commitManifest(name, key, manifest(name, key), {}));
    const map = (await c.mergePartition(name, 'k040'))!;
    await Promise.all(writes);
    expect(map.ranges.map((r) => r.low)).toEqual(['']);
    expect(map.retired).toEqual([split.ranges[1]!.instance]);
    const listed = await other.listVersions(name, { prefix: '', delimiter: null, keyMarker: null, versionIdMarker: null, maxKeys: 1000 });
    expect(listed.versions).toHaveLength(80);
    expect((await c.bucketHealth(name, new Date())).objects).toBe(80);
    const gone = namespace().get(namespace().idFromName(split.ranges[1]!.instance));
    expect(await gone.dispatch('getManifest', [name, 'k040'], undefined, { key: 'k040', epoch: split.epoch })).toEqual({ moved: map.epoch });
    await runInDurableObject(gone, (_o, state) => {
      expect(state.storage.sql.exec('SELECT COUNT(*) AS n FROM versions').one().n).toBe(0);
    });
    const root = namespace().get(namespace().idFromName(map.ranges[0]!.instance));
    await runInDurableObject(root, (_o, state) => {
      expect(state.storage.sql.exec("SELECT COUNT(*) AS n FROM versions WHERE key >= 'k030'").one().n).toBe(40);
      expect(state.storage.sql.exec("SELECT name FROM sqlite_master WHERE name LIKE 'merge_%' OR name LIKE 'split_%'").toArray()).toEqual([]);
    });
  });

  it('returns S3 errors as data across RPC, so the client rethrows S3Error with its fields', async () => {
    const stub = namespace().get(namespace().idFromName('bucket:never-created'));
    const r = await stub.getManifest('never-created', 'k');
    expect(r).toEqual({ error: { code: 'NoSuchBucket', message: expect.any(String), fields: { BucketName: 'never-created' } } });
    const err = await new DurableCatalog(namespace()).getManifest('never-created', 'k').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(S3Error);
    expect(err).toMatchObject({ code: 'NoSuchBucket', status: 404, fields: { BucketName: 'never-created' } });
  });

  it('a fenced call over RPC: a stale stamp does nothing and hands the settings to the request, which passes them and repeats the call; another isolate sees the change', async () => {
    const [one, two] = [new DurableCatalog(namespace()), new DurableCatalog(namespace())];
    const name = `fenced-${Date.now().toString(36)}`;
    await one.insertBucket(name, 'auto');
    await one.commitManifest(name, 'k', manifest(name, 'k'), {});
    const text = JSON.stringify({ Statement: [{ Effect: 'Deny', Principal: '*', Action: 's3:GetObject', Resource: `arn:aws:s3:::${name}/*` }] });
    await one.setBucketPolicy(name, text);
    expect(one.cachedBucketSettings(name).rows.policy).toBe(text); // the isolate that made the change
    expect(two.cachedBucketSettings(name)).toEqual({
      stamp: '',
      rows: { policy: null, 'public-access-block': null, encryption: null, owner: null, ownership: null, acl: null },
    });
    const seen: BucketSettings[] = [];
    let stamp = '';
    const fence: SettingsFence = {
      stampFor: () => stamp,
      changed: async (_bucket, settings) => {
        seen.push(settings);
        stamp = settings.stamp;
      },
    };
    const found = await requestFence.run(fence, () => two.getVersion(name, 'k', null));
    expect(found.kind).toBe('object');
    expect(seen.map((s) => s.rows.policy)).toEqual([text]);
    expect(two.cachedBucketSettings(name).stamp).toBe(stamp);
    // A request refusing what it is handed: the delete is never done.
    const refusing: SettingsFence = {
      stampFor: () => '',
      changed: async () => {
        throw new S3Error('AccessDenied');
      },
    };
    await expect(requestFence.run(refusing, () => two.removeManifest(name, 'k'))).rejects.toMatchObject({ code: 'AccessDenied' });
    expect((await one.getVersion(name, 'k', null)).kind).toBe('object');
    // Deleted: the empty stamp again, and a request checked against none acts at once.
    await two.setBucketPolicy(name, null);
    expect((await one.getBucketSettings(name)).stamp).toBe('');
    await requestFence.run(refusing, () => two.removeManifest(name, 'k'));
    expect((await one.getVersion(name, 'k', null)).kind).not.toBe('object');
  });

  it('frees a deleted bucket instance, leaving no tables behind', async () => {
    const catalog = new DurableCatalog(namespace());
    const name = `freed-${Date.now().toString(36)}`;
    await catalog.insertBucket(name, 'auto');
    await catalog.commitManifest(name, 'k', manifest(name, 'k'), {});
    await catalog.removeManifest(name, 'k');
    await catalog.removeBucket(name);
    const stub = namespace().get(namespace().idFromName('bucket:' + name));
    expect(await stub.listBucketRecords()).toEqual([]); // the instance's own bucket row is gone with its schema
    expect(await stub.takeDueGarbage(Number.MAX_SAFE_INTEGER, 10)).toEqual([]);
  });

  it("migrates schema-1 storage in workerd's own SQLite when a fresh instance starts (test/catalog/migration.test.ts opens the old release's own files in Node)", async () => {
    const catalog = new DurableCatalog(namespace());
    const name = `v1-${Date.now().toString(36)}`;
    await catalog.insertBucket(name, 'auto');
    const [u1, u2] = [unit(), { ...unit(), missing: [2] }];
    const a = manifest(name, 'a', [u1]),
      b = manifest(name, 'b', [u2]);
    await catalog.commitManifest(name, 'a', a, {});
    await catalog.commitManifest(name, 'b', b, {});
    const counted = await catalog.bucketHealth(name, new Date());
    const stub = namespace().get(namespace().idFromName('bucket:' + name));
    await runInDurableObject(stub, (_instance, state) => {
      const sql = state.storage.sql;
      // Schema 1 as commit 27d427c created it: objects keyed by key with the manifest inline, the
      // worklist keyed by (key, unit id), no schema version row.
      sql.exec('DROP TABLE objects; DROP TABLE versions; DROP TABLE units; DROP TABLE degraded_units');
      sql.exec("DELETE FROM state WHERE name = 'schema-version'");
      sql.exec(`CREATE TABLE objects (key TEXT PRIMARY KEY, etag TEXT NOT NULL, size INTEGER NOT NULL, last_modified TEXT NOT NULL,
        checksum TEXT, manifest TEXT NOT NULL) WITHOUT ROWID`);
      sql.exec(`CREATE TABLE degraded_units (key TEXT NOT NULL, unit_id TEXT NOT NULL, missing TEXT NOT NULL, since INTEGER NOT NULL,
        spare INTEGER NOT NULL DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0, next_at INTEGER NOT NULL DEFAULT 0,
        sent_at INTEGER NOT NULL DEFAULT 0, last_error TEXT, PRIMARY KEY (key, unit_id)) WITHOUT ROWID`);
      for (const [key, m] of [
        ['a', a],
        ['b', b],
      ] as const) {
        sql.exec('INSERT INTO objects VALUES (?, ?, ?, ?, ?, ?)', key, m.etag, m.size, m.lastModified, JSON.stringify(m.checksum), JSON.stringify(m));
      }
      sql.exec('INSERT INTO degraded_units (key, unit_id, missing, since, spare, attempts) VALUES (?, ?, ?, ?, 0, 3)', 'b', u2.unitId, '[2]', 1);
      new CatalogObject(state, env as never); // the constructor of a freshly started instance
      expect(sql.exec<{ value: string }>("SELECT value FROM state WHERE name = 'schema-version'").one().value).toBe(String(SCHEMA_VERSION));
    });
    expect(await catalog.getManifest(name, 'a')).toEqual(a);
    expect((await catalog.listManifests(name, { prefix: '', delimiter: null, startAfter: null, maxKeys: 10 })).objects.map((o) => o.key)).toEqual(['a', 'b']);
    expect(await catalog.getUnit(name, u2.unitId, 'b')).toMatchObject({ key: 'b', versionId: b.versionId, unit: { missing: [2] } });
    expect(await catalog.listDegradedUnits(name, null, 10)).toEqual([expect.objectContaining({ key: 'b', unitId: u2.unitId, attempts: 3 })]);
    expect((await catalog.bucketHealth(name, new Date())).objects).toBe(counted.objects);
  });

  it("migrates schema-2 storage to the current schema (versioning, then the ledger's redundancy counts) in workerd's own SQLite (test/catalog/migration-v2.test.ts and migration-v3.test.ts open the old releases' own files in Node)", async () => {
    const catalog = new DurableCatalog(namespace());
    const name = `v2-${Date.now().toString(36)}`;
    await catalog.insertBucket(name, 'auto');
    const a = manifest(name, 'a');
    await catalog.commitManifest(name, 'a', a, {});
    const stub = namespace().get(namespace().idFromName('bucket:' + name));
    await runInDurableObject(stub, (_instance, state) => {
      const sql = state.storage.sql;
      // Schema 2 as commit 577597e created it: versions without seq and null_version.
      sql.exec('DROP INDEX versions_by_seq');
      sql.exec(`CREATE TABLE versions_v2 (key TEXT NOT NULL, version_id TEXT NOT NULL, delete_marker INTEGER NOT NULL DEFAULT 0, manifest TEXT NOT NULL,
        PRIMARY KEY (key, version_id)) WITHOUT ROWID`);
      sql.exec('INSERT INTO versions_v2 SELECT key, version_id, delete_marker, manifest FROM versions');
      sql.exec('DROP TABLE versions; ALTER TABLE versions_v2 RENAME TO versions');
      sql.exec("UPDATE state SET value = '2' WHERE name = 'schema-version'");
      sql.exec("DELETE FROM ledger WHERE name LIKE 'unit%'"); // schema 2's ledger had no redundancy counts
      new CatalogObject(state, env as never);
      expect(sql.exec<{ value: string }>("SELECT value FROM state WHERE name = 'schema-version'").one().value).toBe(String(SCHEMA_VERSION));
    });
    // Schema 4's step counted the stored unit again from its manifest: one whole unit of 2+1, 100 bytes.
    expect((await catalog.bucketHealth(name, new Date())).redundancy.byPolicy['2+1']?.byShardsLeft[0]).toEqual({ shardsLeft: 3, units: 1, bytes: 100 });
    expect(await catalog.getVersion(name, 'a', 'null')).toEqual({ kind: 'object', manifest: a, versionId: 'null' });
    await catalog.setVersioning(name, 'Enabled');
    const next = manifest(name, 'a');
    await catalog.commitManifest(name, 'a', next, {});
    const listed = await catalog.listVersions(name, { prefix: '', delimiter: null, keyMarker: null, versionIdMarker: null, maxKeys: 10 });
    expect(listed.versions.map((v) => [v.versionId, v.isLatest])).toEqual([
      [next.versionId, true],
      ['null', false],
    ]);
  });
});
