// The catalog contract against DurableCatalog inside workerd, on the CATALOG Durable Object
// binding of wrangler.toml (CatalogObject, SQLite storage), plus what only the Durable Object
// can get wrong: S3 errors surviving RPC, and a deleted bucket's instance really being freed.

import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import type { CatalogObject } from '../../worker/catalog/durable-object.ts';
import { DurableCatalog } from '../../worker/catalog/durable-catalog.ts';
import { S3Error } from '../../worker/model/errors.ts';
import { runCatalogContract } from './contract.ts';
import { manifest } from './fixtures.ts';

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
});
