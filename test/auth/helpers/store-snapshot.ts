/**
 * Everything a refused request must leave as it was, as one string: every bucket, its objects,
 * its open uploads and their parts (the mutation suites compare it before and after a request).
 */
import type { Catalog } from '../../../worker/catalog/ports.ts';
import type { LocalCatalogNamespace } from '../../support/local-catalog.ts';

/**
 * The last snapshot of each in-process catalog with its instances' write counts: while no
 * instance was added and none wrote a row (SQLite's total_changes), the catalog holds exactly what
 * it held, and the snapshot is that one (reading everything again was a third of the suites' time).
 */
const last = new WeakMap<object, { writes: string; snapshot: string }>();

function writesOf(catalog: Catalog): string | null {
  const namespace = (catalog as Catalog & { namespace?: LocalCatalogNamespace }).namespace;
  if (!namespace) return null;
  return [...namespace.instances].map(([name, i]) => `${name}=${i.storage.writes()}`).join(' ');
}

export async function snapshotStore(catalog: Catalog): Promise<string> {
  const writes = writesOf(catalog);
  const known = last.get(catalog);
  if (writes !== null && known?.writes === writes) return known.snapshot;
  const snapshot = await readStore(catalog);
  // Counted after reading: a read that created an instance (an empty one) counts as seen.
  const after = writesOf(catalog);
  if (after !== null) last.set(catalog, { writes: after, snapshot });
  return snapshot;
}

async function readStore(catalog: Catalog): Promise<string> {
  const state: unknown[] = [];
  for (const bucket of await catalog.listBucketRecords()) {
    const objects = await catalog.listManifests(bucket.name, { prefix: '', delimiter: null, startAfter: null, maxKeys: 10000 });
    const { uploads } = await catalog.listUploadRecords(bucket.name, { prefix: '', delimiter: null, keyMarker: null, uploadIdMarker: null, maxUploads: 1000 });
    const parts = await Promise.all(uploads.map((u) => catalog.listPartRecords(bucket.name, u.key, u.uploadId, 0, 10000)));
    state.push(bucket, objects, uploads, parts);
  }
  return JSON.stringify(state);
}
