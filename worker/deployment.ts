/**
 * Safe by default (issue 14): what a deployed gateway refuses to run with, and how it knows it is
 * deployed.
 *
 * The signal: the env var SHARDGATE_LOCAL_DEV = "1", set only by the local tooling (dev/
 * local-gateway.ts for `npm start`, `npm run dev`'s `--var`, the test and benchmark harnesses),
 * never in wrangler.toml. Everything else counts as deployed, so a missing or misspelt signal
 * fails safe: `wrangler deploy` of the default wrangler.toml publishes a gateway that refuses
 * every request instead of serving the well-known development key. (Not request.cf, not the
 * host name: both can look local behind a proxy, and neither is the operator's statement.)
 *
 * A deployed gateway refuses to start (every request answered 403, the reasons in the Worker's
 * log, `wrangler tail`) when its config has:
 * - the development access key, or its secret, anywhere;
 * - a secret key inline in SHARDGATE_CONFIG (a client credential's or an S3 backend's): secrets
 *   only through `wrangler secret put`, named by `...Secret` fields;
 * - a named secret or R2 binding that the Worker does not have;
 * - no access key at all (unless allowAnonymous, which is then warned about);
 * - memory backends or `local/` failure domains (the local development pool);
 * - failure domains that cannot hold a policy (failure-domains.ts).
 * Warnings (logged loudly, shown by /_shardgate/status) are risks an operator may accept.
 */
import type { GatewayConfig } from './config.ts';
import { reviewFailureDomains } from './failure-domains.ts';

export const LOCAL_DEV_VAR = 'SHARDGATE_LOCAL_DEV';
/** The development key of wrangler.toml's default config: public, so local only. */
export const DEV_CREDENTIAL = { accessKeyId: 'shardgate-dev', secretAccessKey: 'shardgate-dev-secret' };

export interface DeploymentReview {
  refusals: string[];
  warnings: string[];
}

export function isLocalDevelopment(env: Record<string, unknown>): boolean {
  return env[LOCAL_DEV_VAR] === '1';
}

/** What a deployed gateway would refuse and warn about, for this config and env (secrets, bindings). */
export function reviewDeployment(config: GatewayConfig, env: Record<string, unknown>): DeploymentReview {
  const refusals: string[] = [];
  const warnings: string[] = [];
  const isSet = (name: string | undefined) => name !== undefined && typeof env[name] === 'string' && env[name] !== '';
  const put = (name: string) => `\`wrangler secret put ${name}\``;

  let usable = 0;
  for (const c of config.credentials) {
    const who = `access key ${c.accessKeyId}`;
    if (c.accessKeyId === DEV_CREDENTIAL.accessKeyId) refusals.push(`${who} is the development key, which everyone knows: it works only in local development (npm start). Configure your own key.`);
    else if (c.secretAccessKey !== undefined) refusals.push(`${who} has its secretAccessKey inline in SHARDGATE_CONFIG: a deployed gateway takes secrets only from Worker secrets. Write "secretAccessKeySecret": "NAME" instead and run ${put('NAME')}.`);
    else if (!isSet(c.secretAccessKeySecret)) refusals.push(`${who} names the secret ${c.secretAccessKeySecret}, which is not set: run ${put(c.secretAccessKeySecret!)}.`);
    else if (env[c.secretAccessKeySecret!] === DEV_CREDENTIAL.secretAccessKey) refusals.push(`${who}: the secret ${c.secretAccessKeySecret} holds the development secret; choose a secret of your own.`);
    else usable++;
  }
  if (config.credentials.length === 0 && !config.allowAnonymous) refusals.push('no access key is configured: add "credentials": [{ "accessKeyId": "...", "secretAccessKeySecret": "NAME" }] and run `wrangler secret put NAME`.');
  if (config.allowAnonymous) warnings.push(`allowAnonymous is true: anyone can read and write every bucket without a key${usable ? '' : ' (and no access key is configured)'}.`);

  for (const b of config.backends) {
    const who = `backend ${b.id}`;
    if (b.kind === 'memory') refusals.push(`${who} is a memory backend: its shards live in one isolate's memory and vanish with it. Use r2 or s3 backends.`);
    if (b.domain === 'local' || b.domain.startsWith('local/')) refusals.push(`${who} is in failure domain ${b.domain}: "local/" domains are the local development pool (wrangler.toml's default config). Label each backend with its real provider/region/account.`);
    if (b.faults) warnings.push(`${who} has injected faults configured (faults): meant for local testing.`);
    if (b.kind === 'r2' && typeof (env[b.binding] as { put?: unknown } | undefined)?.put !== 'function') {
      refusals.push(`${who} names the R2 binding ${b.binding}, which this Worker does not have: add it under [[r2_buckets]] (in [env.production] too) and redeploy.`);
    }
    if (b.kind !== 's3') continue;
    if (b.secretAccessKey !== undefined) refusals.push(`${who} has its secretAccessKey inline in SHARDGATE_CONFIG: write "secretAccessKeySecret": "NAME" and run ${put('NAME')}.`);
    else if (!isSet(b.secretAccessKeySecret)) refusals.push(`${who} names the secret ${b.secretAccessKeySecret ?? '(none)'} for its secret key, which is not set: ${b.secretAccessKeySecret ? `run ${put(b.secretAccessKeySecret)}` : 'give "secretAccessKeySecret"'}.`);
    if (b.accessKeyId === undefined && !isSet(b.accessKeyIdSecret)) refusals.push(`${who} has no access key id: give "accessKeyIdSecret" (and run ${put(b.accessKeyIdSecret ?? 'NAME')}) or "accessKeyId".`);
    if (b.endpoint.startsWith('http://')) warnings.push(`${who} talks to ${b.endpoint} without TLS: shard bytes and signed requests cross the network in the clear.`);
  }

  if (!env.OPS) warnings.push('no OPS Durable Object binding (class_name "OpsObject", a new_sqlite_classes migration): status, metrics and the cost report show only the counts of the isolate that answers.');

  const domains = reviewFailureDomains(config.backends, config.policies);
  return { refusals: [...refusals, ...domains.refusals], warnings: [...warnings, ...domains.warnings] };
}
