/**
 * The gateway's key ring from the config's `encryption` section and the Worker's secrets
 * (format/seal.ts has what the keys do). A key named but not set, or not 32 bytes of base64, is a
 * ConfigError naming it: the gateway does not start half-keyed.
 */
import { TransitClient, type TransitBacking, type TransitBound } from '../engine/index.ts';
import { KeyRing, SealError } from '../format/seal.ts';
import { fromBase64 } from '../model/bytes.ts';
import { ConfigError, type GatewayConfig } from './config.ts';

/** The published development key: the local default config's, refused by the deployment review. */
export const DEV_KEY_VALUE = 'c2hhcmRnYXRlLWRldi1rZXktZW5jcnlwdGlvbi1rZXk=';

/** Each configured key's base64 value, from the config (local) or its Worker secret; problems as messages. */
export function keyValues(config: Pick<GatewayConfig, 'encryption'>, env: Record<string, unknown>): { values: Record<string, string>; problems: string[] } {
  const values: Record<string, string> = {};
  const problems: string[] = [];
  for (const k of config.encryption?.keys ?? []) {
    const value = k.value ?? (typeof env[k.secret!] === 'string' ? (env[k.secret!] as string) : undefined);
    if (!value) {
      problems.push(
        `encryption key "${k.id}" names the secret ${k.secret}, which is not set: run \`wrangler secret put ${k.secret}\` with base64 of 32 random bytes (openssl rand -base64 32).`,
      );
      continue;
    }
    const bytes = fromBase64(value.trim())?.length;
    if (bytes !== 32)
      problems.push(`encryption key "${k.id}" is not base64 of 32 bytes${k.secret ? ` (secret ${k.secret})` : ''}: make one with openssl rand -base64 32.`);
    else values[k.id] = value;
  }
  return { values, problems };
}

/** The key ring, or undefined when the config has no `encryption` section. */
export function keyRingOf(config: Pick<GatewayConfig, 'encryption'>, env: Record<string, unknown>): KeyRing | undefined {
  if (!config.encryption) return undefined;
  const { values, problems } = keyValues(config, env);
  if (problems.length) throw new ConfigError(`SHARDGATE_CONFIG: ${problems.join(' ')}`);
  try {
    return KeyRing.fromBase64(values, config.encryption.active);
  } catch (err) {
    if (err instanceof SealError) throw new ConfigError(`SHARDGATE_CONFIG: encryption: ${err.message}`);
    throw err;
  }
}

/** The config's named KMS key entries: a bare id, or an id with the transit key that backs it. */
type KmsKeyEntry = NonNullable<NonNullable<GatewayConfig['encryption']>['kmsKeys']>[number];
export type TransitKeyConfig = Extract<KmsKeyEntry, { transit: unknown }>['transit'];

/** The ids of the config's named KMS keys (encryption.kmsKeys, both forms). */
export function declaredKmsKeys(config: Pick<GatewayConfig, 'encryption'>): string[] {
  return (config.encryption?.kmsKeys ?? []).map((k) => (typeof k === 'string' ? k : k.id));
}

/** The transit-backed keys of the config, by id. */
export function transitKeyConfigs(config: Pick<GatewayConfig, 'encryption'>): Map<string, TransitKeyConfig> {
  return new Map((config.encryption?.kmsKeys ?? []).flatMap((k) => (typeof k === 'string' ? [] : [[k.id, k.transit] as const])));
}

/**
 * The transit backing of each transit-backed key, its token from the Worker secret the config
 * names (a ConfigError naming the secret, never its value, when it is not set), each call bounded
 * by `bound` (the request's deadline).
 */
export function transitBackings(config: Pick<GatewayConfig, 'encryption'>, env: Record<string, unknown>, bound?: TransitBound): Map<string, TransitBacking> {
  const out = new Map<string, TransitBacking>();
  for (const [id, t] of transitKeyConfigs(config)) {
    const token = env[t.tokenSecret];
    if (typeof token !== 'string' || !token)
      throw new ConfigError(
        `SHARDGATE_CONFIG: KMS key "${id}" is backed by a transit key whose token secret ${t.tokenSecret} is not set: run \`wrangler secret put ${t.tokenSecret}\` with a Vault token (docs/OPERATING.md, "KMS keys in Vault or OpenBao").`,
      );
    const settings = { address: t.address, mount: t.mount, key: t.key, token, ...(t.namespace ? { namespace: t.namespace } : {}) };
    out.set(id, { client: new TransitClient(settings, bound), cacheMs: t.cacheSeconds * 1000 });
  }
  return out;
}
