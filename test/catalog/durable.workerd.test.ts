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
import { runCatalogContract } from './contract.ts';
import { manifest, unit } from './fixtures.ts';

function namespace(): DurableObjectNamespace<CatalogObject> {
  const ns = (env as unknown as { CATALOG?: DurableObjectNamespace<CatalogObject> }).CATALOG;
  if (!ns) throw new Error('no CATALOG binding: wrangler.toml must declare the CatalogObject Durable Object');
  return ns;
}

runCatalogContract('durable object (workerd)', (options) => new DurableCatalog(namespace(), options));

describe('CatalogObject', () => {
  it('returns S3 errors as data across RPC, so the client rethrows S3Error with its fields', async () => {
    const stub = namespace().get(namespace().idFromName('bucket:never-created'));
    const r = await stub.getManifest('never-created', 'k');
    expect(r).toEqual({ error: { code: 'NoSuchBucket', message: expect.any(String), fields: { BucketName: 'never-created' } } });
    const err = await new DurableCatalog(namespace()).getManifest('never-created', 'k').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(S3Error);
    expect(err).toMatchObject({ code: 'NoSuchBucket', status: 404, fields: { BucketName: 'never-created' } });
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

  it('counts the objects of an instance written before the ledger existed, once, when it starts', async () => {
    const catalog = new DurableCatalog(namespace());
    const name = `ledger-${Date.now().toString(36)}`;
    await catalog.insertBucket(name, 'auto');
    await catalog.commitManifest(name, 'a', manifest(name, 'a'), {});
    await catalog.commitManifest(name, 'b', manifest(name, 'b', [{ ...unit(), missing: [2] }]), {});
    const counted = await catalog.bucketHealth(name, new Date());
    expect(counted).toMatchObject({ objects: 2, degradedUnits: 1 });
    const stub = namespace().get(namespace().idFromName('bucket:' + name));
    await runInDurableObject(stub, (_instance, state) => {
      // What an older release left: the same objects, no ledger.
      state.storage.sql.exec('DELETE FROM ledger');
      state.storage.sql.exec('DELETE FROM degraded_units');
      expect(state.storage.sql.exec('SELECT COUNT(*) AS n FROM ledger').one().n).toBe(0);
      new CatalogObject(state, env as never); // the constructor of a freshly started instance
    });
    expect(await catalog.bucketHealth(name, new Date())).toEqual(counted);
  });
});
