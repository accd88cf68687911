/**
 * The adoption room's face (issue 41, docs/ADOPTION.md): the source clients a config's `sources`
 * section names, with their secrets from the Worker's env, and the adopting store.
 */
import { SourceClient } from './source-client.ts';

export { Adoption, NotFoundCache, type AdoptionOptions } from './adopting-store.ts';
export { SourceClient } from './source-client.ts';
export { TOMBSTONE_PREFIX } from './tombstones.ts';

/** A source as the config gives it (worker/config/config.ts `sources`). */
export interface SourceEntry {
  endpoint: string;
  bucket: string;
  region: string;
  pathStyle?: boolean;
  accessKeyId?: string;
  secretAccessKey?: string;
  accessKeyIdSecret?: string;
  secretAccessKeySecret?: string;
  timeoutMs: number;
}

/** Bucket -> its source client; throws (naming the bucket and the secret) when a credential is missing. */
export function sourceClients(sources: Record<string, SourceEntry>, env: Record<string, unknown>): Map<string, SourceClient> {
  const secret = (bucket: string, inline: string | undefined, name: string | undefined, field: string): string => {
    if (inline) return inline;
    const value = name === undefined ? undefined : env[name];
    if (typeof value !== 'string' || value === '')
      throw new Error(`source of bucket "${bucket}": no ${field} (set the secret with \`wrangler secret put ${name}\`)`);
    return value;
  };
  return new Map(
    Object.entries(sources).map(([bucket, s]) => [
      bucket,
      new SourceClient({
        endpoint: s.endpoint,
        bucket: s.bucket,
        region: s.region,
        ...(s.pathStyle === undefined ? {} : { pathStyle: s.pathStyle }),
        accessKeyId: secret(bucket, s.accessKeyId, s.accessKeyIdSecret, 'accessKeyId'),
        secretAccessKey: secret(bucket, s.secretAccessKey, s.secretAccessKeySecret, 'secretAccessKey'),
        timeoutMs: s.timeoutMs,
      }),
    ]),
  );
}
export { BackfillService, type BackfillServiceDeps, type RunOptions } from './backfill-service.ts';
export { progressOf, parseState, type BackfillProgress, type BackfillState } from '../model/adopt-backfill.ts';
export {
  cronAdopt,
  isAdoptLink,
  runAdoptLink,
  startAdoptChains,
  type AdoptChainDeps,
  type AdoptLink,
} from './backfill-chain.ts';
