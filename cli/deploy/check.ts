/**
 * The deployment check of a wrangler config file (issue 14): what `wrangler deploy --dry-run`
 * cannot see. The dry run bundles the Worker and lists its bindings, but SHARDGATE_CONFIG is only
 * a string to it; here it is parsed with the gateway's own schema (worker/config/config.ts) and reviewed
 * as a deployed gateway reviews it at start (worker/config/deployment.ts): the development key, inline
 * secrets, local pools, failure domains. Secrets are never in the file, so every secret the
 * config names is taken as set and listed (the operator runs `wrangler secret put` for each),
 * unless the file gives it as a plain var: that is a problem of its own (issue 37: a [vars] entry
 * is in the file and the dashboard for anyone to read), and its value is reviewed as the gateway
 * would see it (the development secret or key there is refused, as the deployed gateway refuses it);
 * R2 bindings are taken from the file's [[r2_buckets]] (their bucket names too: two bindings of one
 * bucket are refused). It also checks the bindings the gateway
 * needs besides its backends: the CATALOG Durable Object and its SQLite migration, the repair
 * queue (producer and consumer) and a cron trigger.
 * Every `[env.NAME]` section is checked as the Worker it deploys (issue 21).
 * Known gaps: it cannot tell whether buckets, secrets or routes exist in the account, nor see a
 * SHARDGATE_LOCAL_DEV given as a secret or with `--var` (the gateway refuses what matters anyway).
 */
import { experimental_readRawConfig, unstable_readConfig, type Unstable_Config } from 'wrangler';
import { ConfigError, parseConfig, type GatewayConfig } from '../../worker/config/config.ts';
import { LOCAL_DEV_VAR, reviewDeployment } from '../../worker/config/deployment.ts';
import { transitKeyConfigs } from '../../worker/config/key-ring.ts';

export interface DeployCheck {
  /** What would make the deployed gateway refuse to start, or break it: the check fails. */
  problems: string[];
  /** Risks a deployed gateway logs at start. */
  warnings: string[];
  /** Worker secrets the config names: each needs `wrangler secret put NAME -c <file>`. */
  secrets: string[];
  config?: GatewayConfig;
}

/**
 * The top level of the file and every `[env.NAME]` section in it (each is a Worker `wrangler
 * deploy --env NAME` would publish, with its own vars: wrangler does not inherit [vars] into an
 * environment). Problems and warnings of an environment are prefixed `[env.NAME] `; `secrets` and
 * `config` are the top level's.
 */
export function checkDeployment(configPath: string): DeployCheck {
  const top = checkWorker(unstable_readConfig({ config: configPath }), '[vars]');
  const envs = Object.keys((experimental_readRawConfig({ config: configPath }).rawConfig as { env?: Record<string, unknown> }).env ?? {});
  for (const name of envs) {
    const r = checkWorker(unstable_readConfig({ config: configPath, env: name }), `[env.${name}.vars]`);
    top.problems.push(...r.problems.map((p) => `[env.${name}] ${p}`));
    top.warnings.push(...r.warnings.map((w) => `[env.${name}] ${w}`));
  }
  return top;
}

function checkWorker(w: Unstable_Config, varsTable: string): DeployCheck {
  const problems: string[] = [];
  const vars = w.vars as Record<string, unknown>;
  if (LOCAL_DEV_VAR in vars)
    problems.push(
      `${LOCAL_DEV_VAR} is set in ${varsTable}: it says "local development" to the gateway. A deployed gateway still refuses the development key and local pools to every request from the network (worker/config/deployment.ts), but the variable has no place in a deployed Worker. Remove it.`,
    );
  if (!w.durable_objects.bindings.some((b) => b.name === 'CATALOG' && b.class_name === 'CatalogObject'))
    problems.push('no Durable Object binding CATALOG (class_name "CatalogObject"): the catalog lives there.');
  if (!w.migrations.some((m) => m.new_sqlite_classes?.includes('CatalogObject')))
    problems.push('no [[migrations]] entry with new_sqlite_classes = ["CatalogObject"]: the catalog needs SQLite storage.');
  if (
    w.durable_objects.bindings.some((b) => b.name === 'OPS' && b.class_name === 'OpsObject') &&
    !w.migrations.some((m) => m.new_sqlite_classes?.includes('OpsObject'))
  ) {
    problems.push('the OPS binding has no [[migrations]] entry with new_sqlite_classes = ["OpsObject"]: the ops record needs SQLite storage.');
  }
  const producer = w.queues.producers?.find((q) => q.binding === 'REPAIR_QUEUE');
  if (!producer) problems.push('no queue producer bound as REPAIR_QUEUE: damaged shards would be repaired inline, holding requests up.');
  else if (!w.queues.consumers?.some((q) => q.queue === producer.queue))
    problems.push(`no consumer for the repair queue ${producer.queue}: repair tasks would pile up unprocessed.`);
  if (!w.triggers.crons?.length) problems.push('no cron trigger ([triggers] crons): superseded shards would never be collected, nor objects scrubbed.');

  const source = vars.SHARDGATE_CONFIG;
  if (typeof source !== 'string' || !source) return { problems: [...problems, `no SHARDGATE_CONFIG in ${varsTable}.`], warnings: [], secrets: [] };
  let config: GatewayConfig;
  try {
    config = parseConfig(source);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return { problems: [...problems, err.message], warnings: [], secrets: [] };
  }
  // Every field of the schema that names a Worker secret (the review and the gateway read the same ones).
  const secrets = [
    ...new Set([
      ...config.credentials.flatMap((c) => (c.secretAccessKeySecret ? [c.secretAccessKeySecret] : [])),
      ...config.backends.flatMap((b) => (b.kind === 's3' ? [b.accessKeyIdSecret, b.secretAccessKeySecret].filter((s): s is string => !!s) : [])),
      ...(config.encryption?.keys ?? []).flatMap((k) => (k.secret ? [k.secret] : [])),
      ...(config.ops.metricsTokenSecret ? [config.ops.metricsTokenSecret] : []),
      ...[...transitKeyConfigs(config).values()].map((t) => t.tokenSecret), // a Vault-backed KMS key's token
    ]),
  ];
  for (const name of secrets.filter((n) => Object.hasOwn(vars, n))) {
    problems.push(
      `${name} is a plain entry of ${varsTable}, but the config names it as a secret: vars are kept in the file and shown in the dashboard. Remove it from ${varsTable} and run \`wrangler secret put ${name}\` (a Worker secret of the same name then takes its place).`,
    );
  }
  const keySecrets = new Set((config.encryption?.keys ?? []).flatMap((k) => (k.secret ? [k.secret] : [])));
  // The env a deployed Worker of this file would have: its R2 bindings, its secrets (set, with a
  // value nobody would choose: the review only looks at whether they are set and not the dev one).
  const env: Record<string, unknown> = { ...vars };
  for (const b of w.r2_buckets) env[b.binding] = { put() {} };
  for (const b of w.durable_objects.bindings) if (b.class_name === 'OpsObject') env[b.name] = {};
  // Queue producers: the Queue destinations of event notifications name them (config/notifications.ts).
  for (const q of w.queues.producers ?? []) env[q.binding] = { send() {}, sendBatch() {} };
  // A secret the file gives as a var keeps its value: the gateway would read that one.
  const standIn = secrets.filter((n) => !Object.hasOwn(vars, n));
  for (const name of standIn) env[name] = '(set with wrangler secret put)';
  // An encryption key's secret must be base64 of 32 bytes: stand in a random one (never the dev key).
  for (const name of standIn.filter((n) => keySecrets.has(n))) env[name] = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))));
  // A bucket name is unique within its jurisdiction: "eu" and the default are two buckets.
  const r2BucketNames = Object.fromEntries(
    w.r2_buckets.flatMap((b) => (b.bucket_name ? [[b.binding, b.jurisdiction ? `${b.bucket_name} (jurisdiction ${b.jurisdiction})` : b.bucket_name]] : [])),
  );
  const review = reviewDeployment(config, env, r2BucketNames);
  return { problems: [...problems, ...review.refusals], warnings: review.warnings, secrets, config };
}
