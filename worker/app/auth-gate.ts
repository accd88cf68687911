/**
 * The app's authentication slot, filled with worker/auth's verifier, the configured access keys
 * and the configured region (a credential scoped to another region is refused, as AWS refuses it).
 * Checksums are verified by the store while it hashes the body anyway (one pass), so the gate only
 * frames and signature-checks; Content-MD5 likewise. It verifies the request view the app built,
 * the one the router reads (model/request.ts). It attaches the signer's scope (model/access.ts);
 * s3/authorize.ts and the operator routes check it.
 */
import { verifyRequest } from '../auth/verify.ts';
import { grantsOf } from '../config/config.ts';
import { DEFAULT_ACCOUNT } from '../model/account.ts';
import { Access, ANONYMOUS_ACCESS, POLICY_ANONYMOUS_ACCESS, S3_ACCESS_GRANTS, FULL_ACCESS, NO_ACCESS, type Grant } from '../model/access.ts';
import { createHasher } from '../model/checksums.ts';
import { verifyingBody } from '../auth/body-stream.ts';
import { plainBodySteps } from '../auth/plain-body.ts';
import { verifyPostForm } from '../auth/post-policy.ts';
import type { Authenticate, PostFormGate } from '../s3/context.ts';

export interface GateConfig {
  /** Each key with its scope (absent: every action, FULL_ACCESS). */
  credentials: { accessKeyId: string; secretAccessKey?: string; secretAccessKeySecret?: string; scope?: Grant | readonly Grant[]; account?: string }[];
  /** true: ANONYMOUS_ACCESS (everything); "policy": POLICY_ANONYMOUS_ACCESS (what bucket policies allow everyone). */
  allowAnonymous: boolean | 'policy';
  /** The gateway's region: the only one a SigV4 credential scope may name. */
  region: string;
  /** A body idle this long fails with RequestTimeout (default 20). */
  clientIdleSeconds?: number;
  /** A body idle this long while its request holds budget others wait for fails with RequestTimeout (default 5). */
  clientStalledSeconds?: number;
}

/** Each configured key's secret and scope. */
function keyTable(config: GateConfig, env: Record<string, unknown>) {
  const anonymous = config.allowAnonymous === 'policy' ? POLICY_ANONYMOUS_ACCESS : ANONYMOUS_ACCESS;
  const credentials = new Map<string, string>();
  const scopes = new Map<string, Access>();
  for (const c of config.credentials) {
    if (scopes.has(c.accessKeyId)) throw new Error(`SHARDGATE_CONFIG: access key ${c.accessKeyId} is given twice in credentials`); // parseConfig refuses it first
    const grants = grantsOf(c);
    const account = c.account ?? DEFAULT_ACCOUNT;
    // A key of another account without a scope: every S3 action, never the operator's (the admin
    // API is gateway-wide: every account's buckets); the config refuses `admin` in its scope.
    scopes.set(c.accessKeyId, grants ? new Access(grants, account) : account === DEFAULT_ACCOUNT ? FULL_ACCESS : new Access(S3_ACCESS_GRANTS, account));
    const secret = c.secretAccessKey ?? env[c.secretAccessKeySecret!];
    if (typeof secret !== 'string' || !secret) {
      throw new Error(
        `SHARDGATE_CONFIG: access key ${c.accessKeyId} names secret ${c.secretAccessKeySecret}, which is not set (wrangler secret put ${c.secretAccessKeySecret})`,
      );
    }
    credentials.set(c.accessKeyId, secret);
  }
  return { credentials, scopes, anonymous };
}

export function makeAuthenticate(config: GateConfig, env: Record<string, unknown>): Authenticate {
  const { credentials, scopes, anonymous } = keyTable(config, env);
  const options = {
    credentials,
    createHasher,
    verifyChecksum: false,
    allowAnonymous: config.allowAnonymous !== false,
    region: config.region,
    clientIdleMs: (config.clientIdleSeconds ?? 20) * 1000,
  };
  const stalledMs = (config.clientStalledSeconds ?? 5) * 1000;
  return async (request, view, owner) => {
    const v = await verifyRequest(request, view, owner ? { ...options, stall: { ms: stalledMs, contended: () => owner.contended() } } : options);
    return {
      body: v.body,
      decodedContentLength: v.decodedContentLength,
      // Header checksums are read by the S3 layer from the headers; only a trailer's comes from here.
      checksum: v.checksum?.location === 'trailer' ? { algorithm: v.checksum.algorithm, expected: v.checksum.declared } : undefined,
      accessKeyId: v.accessKeyId ?? undefined,
      signature: v.authType === 'anonymous' ? undefined : v.authType,
      access: v.accessKeyId === null ? anonymous : (scopes.get(v.accessKeyId) ?? NO_ACCESS),
    };
  };
}

/**
 * The gate of browser form uploads (POST Object, auth/post-policy.ts) over the same keys and
 * scopes: the form's policy and signature instead of the request's, and the raw body guarded as
 * the gate guards every body (an idle client gets RequestTimeout, a short or long one an error,
 * a client gone mid-body IncompleteBody).
 */
export function makePostFormGate(config: GateConfig, env: Record<string, unknown>): PostFormGate {
  const { credentials, scopes, anonymous } = keyTable(config, env);
  const idleMs = (config.clientIdleSeconds ?? 20) * 1000;
  return {
    body(request) {
      if (!request.body) return null;
      const declared = request.headers.get('content-length');
      const contentLength = declared !== null && /^\d+$/.test(declared) ? Number(declared) : null;
      const { step, finish } = plainBodySteps({ contentLength, sha256Hex: null, checksum: null });
      return verifyingBody(request.body, step, finish, idleMs, undefined, contentLength);
    },
    async verify(fields) {
      const v = await verifyPostForm(fields, { credentials, region: config.region, allowAnonymous: config.allowAnonymous !== false });
      return {
        accessKeyId: v.accessKeyId ?? undefined,
        signature: v.authType === 'anonymous' ? undefined : v.authType,
        access: v.accessKeyId === null ? anonymous : (scopes.get(v.accessKeyId) ?? NO_ACCESS),
        lengthRange: v.lengthRange,
      };
    },
  };
}
