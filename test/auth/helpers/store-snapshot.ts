/**
 * Everything a refused request must leave as it was, as one string: every bucket, its objects,
 * its open uploads and their parts (the mutation suites compare it before and after a request).
 */
import type { Catalog } from '../../../worker/catalog/types.ts';

export async function snapshotStore(catalog: Catalog): Promise<string> {
  const state: unknown[] = [];
  for (const bucket of await catalog.listBucketRecords()) {
    const objects = await catalog.listManifests(bucket.name, { prefix: '', delimiter: null, startAfter: null, maxKeys: 10000 });
    const { uploads } = await catalog.listUploadRecords(bucket.name, { prefix: '', delimiter: null, keyMarker: null, uploadIdMarker: null, maxUploads: 1000 });
    const parts = await Promise.all(uploads.map((u) => catalog.listPartRecords(bucket.name, u.key, u.uploadId, 0, 10000)));
    state.push(bucket, objects, uploads, parts);
  }
  return JSON.stringify(state);
}
