/**
 * The scoped keys of the scope suites (issue 21) and a gateway that has them: three data keys
 * (read-only; one bucket pattern `fz-*`; bucket fz under `dir/`) and an admin-only key, each with
 * the oracle's own reading of its grant (written apart from worker/model/access.ts). The gateway
 * holds bucket fz with objects obj and dir/obj.txt, and uploads mpu and dir/mpu with a part each,
 * and an empty bucket fz-own.
 */
import { storeText } from '../../support/memory-store.ts';
import type { Grant } from '../../../worker/model/access.ts';
import { gateApp } from '../../support/gate-app.ts';
import { BUCKET } from './bases.ts';
import { OWN, type Need, type ScopeState } from './scope-bases.ts';

export const ADMIN_KEY = { accessKeyId: 'AKIDADMINONLY', secret: 'admin only secret', grant: { buckets: ['*'], actions: ['admin'] } satisfies Grant };

export interface TestScope {
  name: string;
  accessKeyId: string;
  secret: string;
  grant: Grant;
  /** The oracle's own reading of the grant. */
  bucketOk: (bucket: string) => boolean;
  prefixes: string[] | null;
  actions: Set<string>;
}

export const SCOPES: TestScope[] = [
  {
    name: 'read-only key',
    accessKeyId: 'AKIDREADONLY',
    secret: 'read only secret',
    grant: { buckets: ['*'], actions: ['read', 'list'] },
    bucketOk: () => true,
    prefixes: null,
    actions: new Set(['read', 'list']),
  },
  {
    name: 'one-bucket key (fz-*)',
    accessKeyId: 'AKIDONEBUCKET',
    secret: 'one bucket secret',
    grant: { buckets: ['fz-*'], actions: ['read', 'list', 'write', 'delete'] },
    bucketOk: (b) => b.startsWith('fz-'),
    prefixes: null,
    actions: new Set(['read', 'list', 'write', 'delete']),
  },
  {
    name: 'prefix key (fz, dir/)',
    accessKeyId: 'AKIDPREFIX',
    secret: 'prefix secret',
    grant: { buckets: ['fz'], prefixes: ['dir/'], actions: ['read', 'list', 'write', 'delete'] },
    bucketOk: (b) => b === 'fz',
    prefixes: ['dir/'],
    actions: new Set(['read', 'list', 'write', 'delete']),
  },
];

export function oracleAllows(s: TestScope, need: Need): boolean {
  if (need === 'nothing') return true;
  if (!s.actions.has(need.action)) return false;
  const inPrefix = (k: string) => s.prefixes === null || s.prefixes.some((p) => k.startsWith(p));
  if ('key' in need) return s.bucketOk(need.bucket ?? BUCKET) && inPrefix(need.key);
  if ('wholeBucket' in need) return s.bucketOk(need.wholeBucket) && s.prefixes === null;
  if ('someOf' in need) return s.bucketOk(need.someOf);
  return s.bucketOk(BUCKET) && inPrefix(need.listing);
}

/** A gateway with the scoped keys: bucket fz, objects obj and dir/obj.txt, uploads mpu and dir/mpu with a part each. */
export async function scopedGateway() {
  const trace = { gatePassed: false };
  const g = gateApp(
    (gate) => async (request, view) => {
      const r = await gate(request, view);
      trace.gatePassed = true;
      return r;
    },
    [...SCOPES, ADMIN_KEY].map((s) => ({ accessKeyId: s.accessKeyId, secretAccessKey: s.secret, scope: s.grant })),
  );
  await g.store.createBucket(BUCKET, { region: 'us-east-1' });
  await g.store.createBucket(OWN, { region: 'us-east-1' });
  for (const [key, text] of [
    ['obj', 'object body'],
    ['dir/obj.txt', 'nested object'],
  ]) {
    await storeText(g.store, BUCKET, key, text);
  }
  const part = async (key: string, uploadId: string) =>
    (await g.store.uploadPart(BUCKET, key, uploadId, 1, new Response('part one').body!, { contentLength: 8, contentMD5: null, checksum: null })).etag;
  const { uploadId } = await g.store.createMultipartUpload(BUCKET, 'mpu', { metadata: { user: {} }, checksum: null });
  const { uploadId: dirUploadId } = await g.store.createMultipartUpload(BUCKET, 'dir/mpu', { metadata: { user: {} }, checksum: null });
  const state: ScopeState = { uploadId, dirUploadId, mpuPartEtag: await part('mpu', uploadId), dirPartEtag: await part('dir/mpu', dirUploadId) };
  return { ...g, trace, state };
}
