/**
 * The product's ObjectStore (EcStore) over the given catalog (in Node the one SQL catalog in
 * process: local-catalog.ts; in workerd the catalog Durable Object) and six memory backends in
 * six failure domains, 4+2 with 64 KiB blocks (so ordinary test objects span several stripes).
 * Runs in Node and inside workerd (test/s3/fixtures/worker-sigv4.ts); the S3 suites use it so
 * that they test the real engine, not a stand-in.
 */
import { MemoryBackend } from '../../backends/memory.ts';
import type { Backend } from '../../backends/types.ts';
import type { Catalog } from '../../worker/catalog/ports.ts';
import { engineSettings, parseConfig, s3Settings } from '../../worker/config/config.ts';
import { DEV_KEY_RING } from './dev-encryption.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { KmsKeys } from '../../worker/engine/kms-keys.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import type { S3Settings } from '../../worker/s3/context.ts';

export interface MemoryStoreParts {
  store: EcStore;
  catalog: Catalog;
  backends: Backend[];
  /** The named KMS keys (SSE-KMS) over the catalog's key table, with the local config's declared testkey-1 and testkey-2; absent unsealed. */
  kms?: KmsKeys;
}

/** The development key ring of the local default config: the S3 suites run sealed, as `npm start` does. */
export { DEV_KEY_RING };

export function memoryEcStore(
  catalog: Catalog,
  options: { maxObjectSize?: number; maxPartSize?: number; sealed?: boolean; backends?: Backend[] } = {},
): MemoryStoreParts {
  // `backends`: another store's (two isolates of one gateway).
  const backends = options.backends ?? Array.from({ length: 6 }, (_, i) => new MemoryBackend({ id: `mem-${i}`, domain: `zone-${i}` }));
  const config = parseConfig({
    backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
    policies: { ec: { k: 4, m: 2, blockSize: 65536 } },
    defaultPolicy: 'ec',
    maxObjectSize: options.maxObjectSize,
    s3: { maxPartSize: options.maxPartSize },
  });
  const kms = options.sealed === false ? undefined : new KmsKeys({ catalog, ring: DEV_KEY_RING, region: 'us-east-1', declared: ['testkey-1', 'testkey-2'] });
  const store = new EcStore({
    catalog,
    units: new UnitStore(backends, undefined, { keyRing: kms?.ring }),
    settings: engineSettings(config),
    kms,
  });
  return { store, catalog, backends, kms };
}

/** Front-door settings with the defaults filled in. */
export function testS3Settings(overrides: Partial<S3Settings> = {}): S3Settings {
  return {
    ...s3Settings(parseConfig({ backends: [{ id: 'x', kind: 'memory', domain: 'x' }], policies: { p: { k: 1, m: 0 } }, defaultPolicy: 'p' })),
    ...overrides,
  };
}

/** Stores `text` as `key` of `bucket` through the store (no checksum, no metadata, no conditions): a test's fixture object. */
export async function storeText(store: Pick<EcStore, 'putObject'>, bucket: string, key: string, text: string): Promise<void> {
  const body = new TextEncoder().encode(text);
  await store.putObject(bucket, key, new Response(body).body!, {
    contentLength: body.length,
    contentMD5: null,
    metadata: { user: {} },
    checksum: null,
    conditions: {},
  });
}
