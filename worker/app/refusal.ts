/**
 * The app of a deployed gateway whose config the deployment review refused (deployment.ts): the
 * gateway's own Hono app (same request ids, XML errors, body draining) over a gate that refuses
 * every request with 403 AccessDenied and a message saying why in general terms. The specific
 * reasons (they name access keys, secrets and backends) go only to the Worker's log, at most once
 * a minute per isolate so that `wrangler tail` shows them whenever it is attached.
 * `/_shardgate/status` answers, saying the gateway is refused and how many problems there are.
 */
import { Hono } from 'hono';
import { createApp } from './app.ts';
import type { DeploymentReview } from '../config/deployment.ts';
import { S3Error } from '../model/errors.ts';
import type { ObjectStore } from '../model/object-store.ts';
import type { AppEnv } from '../s3/context.ts';
import { s3Settings, type GatewayConfig } from '../config/config.ts';
import type { BucketConfigStore } from '../model/bucket-config-store.ts';

const LOG_EVERY_MS = 60_000;

export function refusingApp(review: DeploymentReview, config: Pick<GatewayConfig, 'region' | 'baseDomains' | 'maxObjectSize' | 's3'>): Hono<AppEnv> {
  const message = refusalMessage(review);
  let lastLogged = -Infinity;
  const refuse = (): never => {
    const now = Date.now();
    if (now - lastLogged >= LOG_EVERY_MS) {
      lastLogged = now;
      logRefusal(review);
    }
    throw new S3Error('AccessDenied', message);
  };
  // Nothing behind the gate is ever reached; the store refuses too (a CORS preflight asks it first).
  const store = new Proxy({}, { get: () => refuse }) as ObjectStore;
  const bucketConfig = new Proxy({}, { get: () => refuse }) as BucketConfigStore;
  const admin = new Hono<AppEnv>();
  admin.all('*', refuse);
  const operator = new Hono<AppEnv>();
  operator.get('/status', (c) =>
    c.json({ service: 'shardgate', refused: true, message, problems: review.refusals.length, warnings: review.warnings.length }, 503),
  );
  operator.all('*', refuse);
  return createApp({
    store,
    config: bucketConfig,
    authenticate: async () => refuse(),
    settings: s3Settings(config),
    operator,
    admin,
  });
}

/**
 * What every refused request is told: how many problems and where they are listed, and the
 * sentence about the development key only when a problem is about it (a config refused for a
 * missing secret has nothing to do with local development).
 */
export function refusalMessage(review: DeploymentReview): string {
  const n = review.refusals.length;
  const devKey = review.devKey ? ' The development key works only in local development (npm start).' : '';
  return `shardgate refuses every request: its configuration is not fit for a deployed worker (${n} problem${n > 1 ? 's' : ''}, listed in the Worker's log: wrangler tail).${devKey}`;
}

export function logRefusal(review: DeploymentReview): void {
  const localHint = review.localOnly ? '\n  (local development sets SHARDGATE_LOCAL_DEV=1: npm start does; see docs/DEPLOY.md)' : '';
  console.error(
    `shardgate: REFUSING every request: the configuration is not fit for a deployed worker:\n${review.refusals.map((r) => `  - ${r}`).join('\n')}${localHint}`,
  );
}
