/**
 * Safe by default (issues 14 and 21): what a deployed gateway refuses to run with, and how it knows
 * that a request really is local, so that no single setting can switch the review off.
 *
 * The review ALWAYS runs, wherever the Worker is. What it refuses (below) is only ever served
 * when two things hold together:
 * 1. the operator's statement: the var SHARDGATE_LOCAL_DEV = "1", set only by the local tooling
 *    (dev/local-gateway.ts for `npm start`, `npm run dev`'s `--var`, the test harnesses), never in
 *    a wrangler file (`check-deploy` refuses it in [vars] and in every [env.*] section); and
 * 2. the request's own proof that it was made on this machine (`isLoopbackRequest`): its URL host
 *    is a loopback name or address (localhost and names under it, RFC 6761, which local
 *    virtual-hosted buckets use; 127.0.0.0/8; [::1]) AND it carries no
 *    CF-Connecting-IP, or a loopback one.
 * On Cloudflare's edge the second never holds, whatever the Worker's vars, secrets or [env]
 * sections say: the edge routes a request to a Worker only for a hostname of a zone or
 * workers.dev (never localhost, a name under .localhost or an IP literal), and it sets CF-Connecting-IP itself, to the
 * address the client connected from, which is never a loopback address. So a deployed gateway
 * with SHARDGATE_LOCAL_DEV=1 set (as a var, a secret, `--var` or in an [env] section) and the
 * development config answers every request from the internet with the refusal, and the public
 * status says `refused`; only the variable is in the operator's hands, not the request.
 * (Not request.cf: miniflare fakes one locally. The host name alone is not enough: an
 * absolute-form request target could name another host than the one routed on; the edge's
 * CF-Connecting-IP cannot be set by a client.)
 * Known gap: a request from another Worker of the same account through a service binding carries
 * whatever URL that Worker gives it; binding this gateway to another Worker is an operator's
 * deliberate act, and the review cannot see it. The cron and the repair queue have no request to
 * judge: with the signal set they run over the configured backends even when deployed (they
 * serve nobody, so the development key opens nothing there).
 *
 * A gateway refuses (every non-local request answered 403, the reasons in the Worker's log,
 * `wrangler tail`) when its config has:
 * - the development access key, or its secret, anywhere;
 * - a secret key inline in SHARDGATE_CONFIG (a client credential's or an S3 backend's): secrets
 *   only through `wrangler secret put`, named by `...Secret` fields;
 * - a named secret or R2 binding that the Worker does not have (ops.metricsTokenSecret and the
 *   token secret of a KMS key's Vault transit key included);
 * - no access key at all (unless allowAnonymous, which is then warned about);
 * - memory backends or `local/` failure domains (the local development pool);
 * - failure domains that cannot hold a policy (failure-domains.ts);
 * - two backends that store to the same place: one endpoint and bucket, one R2 binding or R2
 *   bucket (destinations.ts);
 * - an event notification webhook over http, to a loopback or private address, to the gateway's
 *   own hosts, or with an inline or missing signing secret; a Queue binding it does not have
 *   (notifications.ts).
 * Warnings (logged loudly, shown by /_shardgate/status) are risks an operator may accept: keys
 * without a scope (every action, the operator API included), `ops.open`, anonymous access, ...
 */
import { DEV_KEY_VALUE, keyValues, transitKeyConfigs } from './key-ring.ts';
import type { GatewayConfig } from './config.ts';
import { reviewDestinations } from './destinations.ts';
import { reviewFailureDomains } from './failure-domains.ts';
import { reviewNotifications } from './notifications.ts';

export const LOCAL_DEV_VAR = 'SHARDGATE_LOCAL_DEV';
/** The development key of wrangler.toml's default config: public, so local only. */
export const DEV_CREDENTIAL = { accessKeyId: 'shardgate-dev', secretAccessKey: 'shardgate-dev-secret' };

export interface DeploymentReview {
  refusals: string[];
  warnings: string[];
  /** Some refusal is about the development key (the access key, its secret, or the published encryption key). */
  devKey?: boolean;
  /** Some refusal is about what only local development may use: the development key, the local pool. */
  localOnly?: boolean;
}

/** The operator's statement (condition 1 above); never enough on its own. */
export function isLocalDevelopment(env: Record<string, unknown>): boolean {
  return env[LOCAL_DEV_VAR] === '1';
}

const LOOPBACK_HOST = /^(([a-z0-9-]+\.)*localhost|127(\.\d{1,3}){3}|\[::1\])$/i;
const LOOPBACK_IP = /^(127(\.\d{1,3}){3}|::1|::ffff:127(\.\d{1,3}){3})$/i;

/** The request's proof that it was made on this machine (condition 2 above). */
export function isLoopbackRequest(request: Request): boolean {
  let host: string;
  try {
    host = new URL(request.url).hostname;
  } catch {
    return false;
  }
  const connecting = request.headers.get('cf-connecting-ip');
  return LOOPBACK_HOST.test(host) && (connecting === null || LOOPBACK_IP.test(connecting.trim()));
}

/**
 * What a deployed gateway would refuse and warn about, for this config and env (secrets, bindings).
 * `r2BucketNames` (binding -> bucket_name, from the wrangler file) lets it see two R2 bindings of
 * one bucket; a running Worker does not know them.
 */
export function reviewDeployment(config: GatewayConfig, env: Record<string, unknown>, r2BucketNames: Readonly<Record<string, string>> = {}): DeploymentReview {
  const refusals: string[] = [];
  const warnings: string[] = [];
  const isSet = (name: string | undefined) => name !== undefined && typeof env[name] === 'string' && env[name] !== '';
  const put = (name: string) => `\`wrangler secret put ${name}\``;
  // What the refusal message says beyond the list: only what concerns these problems.
  let devKey = false;
  let localPool = false;

  let usable = 0;
  for (const c of config.credentials) {
    const who = `access key ${c.accessKeyId}`;
    if (c.accessKeyId === DEV_CREDENTIAL.accessKeyId) {
      devKey = true;
      refusals.push(`${who} is the development key, which everyone knows: it works only in local development (npm start). Configure your own key.`);
    } else if (c.secretAccessKey !== undefined)
      refusals.push(
        `${who} has its secretAccessKey inline in SHARDGATE_CONFIG: a deployed gateway takes secrets only from Worker secrets. Write "secretAccessKeySecret": "NAME" instead and run ${put('NAME')}.`,
      );
    else if (!isSet(c.secretAccessKeySecret))
      refusals.push(`${who} names the secret ${c.secretAccessKeySecret}, which is not set: run ${put(c.secretAccessKeySecret!)}.`);
    else if (env[c.secretAccessKeySecret!] === DEV_CREDENTIAL.secretAccessKey) {
      devKey = true;
      refusals.push(`${who}: the secret ${c.secretAccessKeySecret} holds the development secret; choose a secret of your own.`);
    } else usable++;
  }
  for (const c of config.credentials) {
    if (c.scope === undefined && c.accessKeyId !== DEV_CREDENTIAL.accessKeyId)
      warnings.push(
        `access key ${c.accessKeyId} has no scope: it may do everything, on every bucket, the operator API included. Give it a "scope" (docs/DEPLOY.md, "Access keys").`,
      );
  }
  if (config.ops.open)
    warnings.push(
      'ops.open is true: /_shardgate/metrics and the whole /_shardgate/status (bucket names, error messages) answer anyone who can reach the gateway. Keep it for a gateway reachable only from a private network.',
    );
  if (config.ops.metricsTokenSecret && !isSet(config.ops.metricsTokenSecret))
    refusals.push(`ops.metricsTokenSecret names the secret ${config.ops.metricsTokenSecret}, which is not set: run ${put(config.ops.metricsTokenSecret)}.`);
  if (config.credentials.length === 0 && !config.allowAnonymous)
    refusals.push(
      'no access key is configured: add "credentials": [{ "accessKeyId": "...", "secretAccessKeySecret": "NAME" }] and run `wrangler secret put NAME`.',
    );
  if (config.allowAnonymous === true)
    warnings.push(`allowAnonymous is true: anyone can read and write every bucket without a key${usable ? '' : ' (and no access key is configured)'}.`);
  if (config.allowAnonymous === 'policy' && !usable)
    warnings.push('allowAnonymous is "policy" and no access key is configured: no one can create a bucket or write a policy that lets anyone in.');

  for (const b of config.backends) {
    const who = `backend ${b.id}`;
    if (b.kind === 'memory') {
      localPool = true;
      refusals.push(`${who} is a memory backend: its shards live in one isolate's memory and vanish with it. Use r2 or s3 backends.`);
    }
    if (b.domain === 'local' || b.domain.startsWith('local/')) {
      localPool = true;
      refusals.push(
        `${who} is in failure domain ${b.domain}: "local/" domains are the local development pool (wrangler.toml's default config). Label each backend with its real provider/region/account.`,
      );
    }
    if (b.faults) warnings.push(`${who} has injected faults configured (faults): meant for local testing.`);
    if (b.kind === 'r2' && typeof (env[b.binding] as { put?: unknown } | undefined)?.put !== 'function') {
      refusals.push(
        `${who} names the R2 binding ${b.binding}, which this Worker does not have: add it under [[r2_buckets]] (in [env.production] too) and redeploy.`,
      );
    }
    if (b.kind !== 's3') continue;
    if (b.secretAccessKey !== undefined)
      refusals.push(`${who} has its secretAccessKey inline in SHARDGATE_CONFIG: write "secretAccessKeySecret": "NAME" and run ${put('NAME')}.`);
    else if (!isSet(b.secretAccessKeySecret))
      refusals.push(
        `${who} names the secret ${b.secretAccessKeySecret ?? '(none)'} for its secret key, which is not set: ${b.secretAccessKeySecret ? `run ${put(b.secretAccessKeySecret)}` : 'give "secretAccessKeySecret"'}.`,
      );
    if (b.accessKeyId === undefined && !isSet(b.accessKeyIdSecret))
      refusals.push(`${who} has no access key id: give "accessKeyIdSecret" (and run ${put(b.accessKeyIdSecret ?? 'NAME')}) or "accessKeyId".`);
    if (b.endpoint.startsWith('http://'))
      warnings.push(`${who} talks to ${b.endpoint} without TLS: shard bytes and signed requests cross the network in the clear.`);
  }
  refusals.push(...reviewDestinations(config.backends, r2BucketNames));
  // A bucket's source (issue 41, docs/ADOPTION.md): its keys are secrets as a backend's are.
  // Whether it answers (credentials, endpoint) needs I/O: adopt/source-probe.ts, with the first status read.
  for (const [bucket, s] of Object.entries(config.sources)) {
    const who = `the source of bucket "${bucket}"`;
    if (s.secretAccessKey !== undefined)
      refusals.push(`${who} has its secretAccessKey inline in SHARDGATE_CONFIG: write "secretAccessKeySecret": "NAME" and run ${put('NAME')}.`);
    else if (!isSet(s.secretAccessKeySecret))
      refusals.push(`${who} names the secret ${s.secretAccessKeySecret} for its secret key, which is not set: run ${put(s.secretAccessKeySecret!)}.`);
    if (s.accessKeyId === undefined && !isSet(s.accessKeyIdSecret))
      refusals.push(`${who} names the secret ${s.accessKeyIdSecret} for its access key id, which is not set: run ${put(s.accessKeyIdSecret!)}.`);
    if (s.endpoint.startsWith('http://'))
      warnings.push(`${who} is read from ${s.endpoint} without TLS: object bytes and signed requests cross the network in the clear.`);
  }

  for (const k of config.encryption?.keys ?? []) {
    if (k.value !== undefined)
      refusals.push(
        `encryption key "${k.id}" is inline in SHARDGATE_CONFIG ("value"): a deployed gateway takes keys only from Worker secrets. Write "secret": "NAME" and run ${put('NAME')} with base64 of 32 random bytes.`,
      );
    else if (env[k.secret!] === DEV_KEY_VALUE) {
      devKey = true;
      refusals.push(`encryption key "${k.id}": the secret ${k.secret} holds the published development key; make your own (openssl rand -base64 32).`);
    }
  }
  refusals.push(...keyValues(config, env).problems);
  // A KMS key backed by a Vault / OpenBao transit key: its token is a secret as a backend's keys are.
  // Whether Vault answers (token, key, its type) needs I/O: engine/transit-probe.ts, with the first status read.
  for (const [id, t] of transitKeyConfigs(config)) {
    const who = `KMS key "${id}" (transit key ${t.mount}/${t.key} at ${t.address})`;
    if (!isSet(t.tokenSecret)) refusals.push(`${who} names the token secret ${t.tokenSecret}, which is not set: run ${put(t.tokenSecret)} with a Vault token.`);
    if (t.address.startsWith('http://')) warnings.push(`${who} is reached without TLS: its Vault token and the keys' material cross the network in the clear.`);
    if (!config.encryption?.active)
      warnings.push(`${who} needs the gateway's own encryption with an active key (encryption.active): without it SSE-KMS answers NotImplemented.`);
  }
  if (!config.encryption)
    warnings.push(
      'no "encryption" section: objects are stored in the clear on the backends (contents, and bucket and key names in shard headers). Add a key: "encryption": { "keys": [{ "id": "k1", "secret": "SHARDGATE_KEY_K1" }], "active": "k1" }.',
    );
  else if (config.encryption.active === null) warnings.push('encryption.active is null: new objects are stored in the clear.');

  if (!env.OPS)
    warnings.push(
      'no OPS Durable Object binding (class_name "OpsObject", a new_sqlite_classes migration): status, metrics and the cost report show only the counts of the isolate that answers.',
    );

  // Placement only ever uses active backends: their domains are what new objects get.
  const domains = reviewFailureDomains(
    config.backends.filter((b) => b.state === 'active'),
    config.policies,
  );
  const leaving = config.backends.filter((b) => b.state !== 'active');
  if (leaving.length) {
    warnings.push(
      `backend(s) ${leaving.map((b) => `${b.id} (${b.state})`).join(', ')} take no new shards. A draining backend's shards are moved off by the cron's mover (shardgate drain --estimate ${leaving[0]!.id} for the bill first); a retired one is never read, and the status reports it critical while the catalog records shards there (docs/OPERATING.md, "Changing the fleet").`,
    );
  }
  // Event notification destinations (config/notifications.ts): the gateway's own hosts are its base domains.
  const events = reviewNotifications(config.notifications, env, config.baseDomains);
  if (events.localOnly) localPool = true;
  const review: DeploymentReview = {
    refusals: [...refusals, ...domains.refusals, ...events.refusals],
    warnings: [...warnings, ...domains.warnings, ...events.warnings],
  };
  if (devKey) review.devKey = true;
  if (devKey || localPool) review.localOnly = true;
  return review;
}
