/**
 * The `notifications` section of SHARDGATE_CONFIG as the catalog uses it (docs/NOTIFICATIONS.md):
 * the destinations a bucket's rules may name (by the last `:` segment of their ARN, as MinIO names
 * its targets), the bound of each partition's outbox and what a full one does, delivery's timeouts
 * and retries. Its schema, with the same defaults, is config.ts `notificationSettings` (the
 * gateway refuses to start on a section it does not accept); the catalog's Durable Object reads
 * the section from its env here, once per config text, with no schema of its own: it only ever
 * runs behind a gateway that accepted the same text.
 */

export type EventDestination = { queue: string } | { webhook: string; secret?: string; secretValue?: string; cloudEvents?: boolean; recordsPerPost?: number };

export interface NotificationSettings {
  destinations: Record<string, EventDestination>;
  outboxLimit: number;
  whenFull: 'drop-oldest' | 'refuse';
  timeoutMs: number;
  maxAttempts: number;
  backoffMs: number;
  maxBackoffMs: number;
  batchSize: number;
  /**
   * A commit's events are due this long after it (ms), so the events of the commits in that time
   * go out in one alarm run (one transaction, one Queue sendBatch) instead of a run each.
   */
  coalesceMs: number;
}

/** The defaults (config.ts's schema takes them from here). */
export const NOTIFICATION_DEFAULTS: NotificationSettings = {
  destinations: {},
  outboxLimit: 10_000,
  whenFull: 'drop-oldest',
  timeoutMs: 10_000,
  maxAttempts: 12,
  backoffMs: 1000,
  maxBackoffMs: 600_000,
  batchSize: 50,
  coalesceMs: 100,
};

let cached: { text: string | undefined; settings: NotificationSettings } | undefined;

/** The section as the catalog reads it from its env (the same SHARDGATE_CONFIG the gateway has): defaults where absent. */
export function notificationsOf(env: { SHARDGATE_CONFIG?: string }): NotificationSettings {
  const text = env.SHARDGATE_CONFIG;
  if (cached && cached.text === text) return cached.settings;
  let settings = NOTIFICATION_DEFAULTS;
  try {
    const raw = text ? (JSON.parse(text) as { notifications?: Partial<NotificationSettings> }).notifications : undefined;
    if (raw && typeof raw === 'object') settings = { ...NOTIFICATION_DEFAULTS, ...raw, destinations: raw.destinations ?? {} };
  } catch {
    // not JSON: the gateway refuses it with the reason, and serves nothing
  }
  cached = { text, settings };
  return settings;
}
