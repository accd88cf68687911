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
