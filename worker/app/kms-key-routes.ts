/**
 * The admin API's named KMS key routes (SSE-KMS; docs/OPERATING.md "KMS keys"), mounted by
 * admin.ts (POST, signed by a key with the admin action, as every admin route):
 *   kms-keys                     every key: id, ARN, state, origin, versions (never their material)
 *   kms-keys/create?id=ID        a new key (one version of 32 random bytes, wrapped under the
 *                                gateway's active key in the catalog's key table)
 *   kms-keys/disable?id=ID       writes and reads naming it are refused (KMS.DisabledException)
 *   kms-keys/enable?id=ID        ... and allowed again
 *   kms-keys/rotate?id=ID        a new current version: new writes use it at once; answers the key
 *   kms-keys/rewrap?id=ID        re-wraps, for up to ~20 s, the data keys under the key's older
 *                                versions under its current one (catalog only); call again until
 *                                `done` (`shardgate keys rotate` does both). For a key backed by a
 *                                Vault / OpenBao transit key, each version's material is first
 *                                re-wrapped by Vault under the transit key's latest version (after
 *                                the operator rotated it there: `transitRewrapped` counts them;
 *                                `shardgate keys rewrap` does this alone)
 */
import type { Hono } from 'hono';
import type { KeyCatalog } from '../catalog/ports.ts';
import type { KmsKeys } from '../engine/index.ts';
import { S3Error } from '../model/errors.ts';
import { transitVersionOf } from '../engine/index.ts';
import { currentVersion, type KmsKeyRecord } from '../model/kms-key.ts';
import type { AppEnv } from '../s3/context.ts';
import { rotateNamedKey } from '../upkeep/rotate-keys.ts';

/** How long one rewrap call works before it answers (the CLI calls again). */
const REWRAP_CALL_MS = 20_000;

export interface KmsKeyRouteDeps {
  catalog: KeyCatalog;
  /** Absent: a gateway without its own encryption (every route answers so). */
  kms?: KmsKeys;
}

export function kmsKeyRoutes(admin: Hono<AppEnv>, deps: KmsKeyRouteDeps): void {
  const kms = (): KmsKeys => {
    if (!deps.kms) throw new S3Error('InvalidArgument', 'this gateway has no key ring (config "encryption" with an active key), so no KMS keys');
    return deps.kms;
  };
  const idOf = (q: URLSearchParams, route: string): string => {
    const id = q.get('id');
    if (!id) throw new S3Error('InvalidArgument', `${route} needs ?id=KEY_ID`);
    return id;
  };
  const shown = (r: KmsKeyRecord) => ({
    id: r.id,
    arn: kms().arn(r.id),
    state: r.state,
    origin: r.origin,
    created: r.created,
    version: currentVersion(r).version,
    ...(kms().isTransit(r.id) ? { transit: true } : {}),
    versions: r.versions.map((v) => ({
      version: v.version,
      created: v.created,
      wrappedUnder: v.kid,
      // The transit key version that wraps it (vault:vN:): what a Vault rotation and a rewrap move on.
      ...(v.transit ? { transitVersion: transitVersionOf(v.wrapped) } : {}),
    })),
  });

  admin.post('/kms-keys', async (c) => c.json({ keys: (await kms().list()).map(shown) }));
  admin.post('/kms-keys/create', async (c) => c.json(shown(await kms().create(idOf(c.var.view.query, 'kms-keys/create')))));
  admin.post('/kms-keys/disable', async (c) => c.json(shown(await kms().setEnabled(idOf(c.var.view.query, 'kms-keys/disable'), false))));
  admin.post('/kms-keys/enable', async (c) => c.json(shown(await kms().setEnabled(idOf(c.var.view.query, 'kms-keys/enable'), true))));
  admin.post('/kms-keys/rotate', async (c) => c.json(shown(await kms().rotate(idOf(c.var.view.query, 'kms-keys/rotate')))));
  admin.post('/kms-keys/rewrap', async (c) => {
    const id = idOf(c.var.view.query, 'kms-keys/rewrap');
    if (!(await kms().get(id))) throw new S3Error('InvalidArgument', `no KMS key "${id}"`);
    // The material's own wrapping first (Vault's rewrap; none for a key the gateway's ring wraps), then the data keys.
    const transitRewrapped = await kms().rewrapTransit(id);
    const record = (await kms().get(id))!;
    const version = currentVersion(record).version;
    const report = await rotateNamedKey(deps.catalog, kms().ring, id, version, { deadline: Date.now() + REWRAP_CALL_MS });
    return c.json({ id, version, ...(kms().isTransit(id) ? { transitRewrapped } : {}), ...report });
  });
}
