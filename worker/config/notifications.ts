/**
 * The `notifications` section of SHARDGATE_CONFIG (docs/NOTIFICATIONS.md): the destinations a
 * bucket's notification rules may name (by the last `:` segment of their ARN, as MinIO names its
 * targets), the bound of each partition's outbox and what a full one does, and delivery's
 * timeouts and retries. Read by the catalog's Durable Object too (it stores the rules, checks
 * their ARNs and delivers from its alarm), which parses only this section, once per config text.
 */
import { z } from 'zod';

const destinationName = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9._-]+$/, 'letters, digits, ".", "_" and "-"');

/** A Cloudflare Queue producer binding: each event one message, `{ Records: [...] }` as AWS sends to SQS. */
const queueDestination = z
  .object({
    /** The producer binding's name in the wrangler file ([[queues.producers]] binding). */
    queue: z.string().min(1),
  })
  .strict();

/** An HTTP endpoint: each event one POST, signed `x-shardgate-signature: sha256=<hex HMAC-SHA256 of the body>`. */
const webhookDestination = z
  .object({
    /** https://...; http:// only for loopback hosts in local development (the deployment review refuses others). */
    webhook: z.string().url(),
    /** Env name of the Worker secret that signs each POST (absent: unsigned, refused by the deployment review). */
    secret: z.string().min(1).optional(),
    /** Local development only: the signing secret inline (the deployment review refuses it). */
    secretValue: z.string().min(1).optional(),
    /** Also send the CloudEvents 1.0 binary-mode headers (ce-specversion, ce-type, ce-source, ce-id, ce-time, ce-subject). */
    cloudEvents: z.boolean().default(false),
  })
  .strict();

export const notificationSettings = z
  .object({
    destinations: z.record(destinationName, z.union([queueDestination, webhookDestination])).default({}),
    /**
     * Undelivered events one partition of a bucket holds at most (a bucket of one partition: per
     * bucket). Beyond it `whenFull` decides.
     */
    outboxLimit: z.number().int().min(10).max(1_000_000).default(10_000),
    /** 'drop-oldest': writes succeed, the oldest undelivered events are dropped and counted; 'refuse': writes answer 503 SlowDown, nothing stored. */
    whenFull: z.enum(['drop-oldest', 'refuse']).default('drop-oldest'),
    /** Longest one delivery (a POST, a queue send) may take before it counts as failed (ms). */
    timeoutMs: z.number().int().min(100).max(60_000).default(10_000),
    /** Deliveries tried before an event is dead-lettered (kept, counted, shown by `shardgate events`). */
    maxAttempts: z.number().int().min(1).max(100).default(12),
    /** First retry delay (ms); doubled after each failure up to `maxBackoffMs`. */
    backoffMs: z.number().int().min(10).max(3_600_000).default(1000),
    maxBackoffMs: z.number().int().min(10).max(86_400_000).default(600_000),
    /** Events one alarm run sends per destination at most (the memory one run holds). */
    batchSize: z.number().int().min(1).max(100).default(50),
  })
  .strict();

export type NotificationSettings = z.output<typeof notificationSettings>;
export type EventDestination = NotificationSettings['destinations'][string];

export const DEFAULT_NOTIFICATIONS: NotificationSettings = notificationSettings.parse({});

let cached: { text: string | undefined; settings: NotificationSettings } | undefined;

/**
 * The section as the catalog reads it from its env (the same SHARDGATE_CONFIG the gateway has):
 * defaults when absent; an invalid section reads as no destinations (the gateway itself refuses
 * to start with it, so nothing is delivered anywhere unintended).
 */
export function notificationsOf(env: { SHARDGATE_CONFIG?: string }): NotificationSettings {
  const text = env.SHARDGATE_CONFIG;
  if (cached && cached.text === text) return cached.settings;
  let settings = DEFAULT_NOTIFICATIONS;
  try {
    const raw = text ? (JSON.parse(text) as { notifications?: unknown }).notifications : undefined;
    const r = notificationSettings.safeParse(raw ?? {});
    if (r.success) settings = r.data;
  } catch {
    // not JSON: the gateway refuses it with the reason
  }
  cached = { text, settings };
  return settings;
}

const LOOPBACK_OR_PRIVATE =
  /^(([a-z0-9-]+\.)*localhost|127(\.\d{1,3}){3}|10(\.\d{1,3}){3}|192\.168(\.\d{1,3}){2}|172\.(1[6-9]|2\d|3[01])(\.\d{1,3}){2}|169\.254(\.\d{1,3}){2}|\[::1\]|\[f[cd][0-9a-f:]*\])$/i;

/**
 * The deployment review of the destinations (config/deployment.ts): refused are a webhook over
 * plain http or to a loopback or private address (what only local development may use: `localOnly`),
 * one to the gateway's own hosts (its events would be posted back to itself), an inline signing
 * secret, a named secret or Queue binding the Worker does not have; an unsigned webhook is warned
 * about. (A webhook's DNS name is not resolved here: a name that resolves to a private address is
 * Cloudflare's to refuse, as fetch() from a Worker cannot reach private networks.)
 */
export function reviewNotifications(
  settings: NotificationSettings,
  env: Record<string, unknown>,
  gatewayHosts: readonly string[],
): { refusals: string[]; warnings: string[]; localOnly: boolean } {
  const refusals: string[] = [];
  const warnings: string[] = [];
  let localOnly = false;
  for (const [name, d] of Object.entries(settings.destinations)) {
    const who = `notifications.destinations.${name}`;
    if ('queue' in d) {
      if (typeof (env[d.queue] as { sendBatch?: unknown } | undefined)?.sendBatch !== 'function')
        refusals.push(`${who} names the Queue binding ${d.queue}, which this Worker does not have: add it under [[queues.producers]] and redeploy.`);
      continue;
    }
    const url = new URL(d.webhook);
    const host = url.hostname.toLowerCase();
    if (url.protocol !== 'https:') {
      localOnly = true;
      refusals.push(`${who} posts to ${d.webhook} without TLS: events (bucket and key names) would cross the network in the clear. Use an https:// URL.`);
    }
    if (LOOPBACK_OR_PRIVATE.test(host)) {
      localOnly = true;
      refusals.push(`${who} posts to ${host}, a loopback or private address: only local development may.`);
    }
    if (gatewayHosts.some((g) => host === g || host.endsWith(`.${g}`)))
      refusals.push(`${who} posts to ${host}, a host of this gateway: its events would be sent back to itself.`);
    if (d.secretValue !== undefined) {
      localOnly = true;
      refusals.push(`${who} has its signing secret inline ("secretValue"): write "secret": "NAME" and run \`wrangler secret put NAME\`.`);
    } else if (d.secret !== undefined && !(typeof env[d.secret] === 'string' && env[d.secret] !== ''))
      refusals.push(`${who} names the secret ${d.secret}, which is not set: run \`wrangler secret put ${d.secret}\`.`);
    else if (d.secret === undefined) warnings.push(`${who} has no signing secret: receivers cannot tell its POSTs from anyone's.`);
  }
  return { refusals, warnings, localOnly };
}
