/**
 * Delivery of a partition's outbox (catalog/sql-outbox.ts), run from the partition's alarm
 * (durable-object.ts): per destination, its due rows in order, sent until one fails; each
 * outcome recorded in its own transaction. At least once: a row is marked delivered only after
 * the destination acknowledged it, so a run cut short (the instance restarted, the alarm lost
 * mid-send) sends it again, with the same body and event id (`x-shardgate-event-id`) for the
 * receiver to de-duplicate.
 * - Webhook: one POST per event (or up to `recordsPerPost` events' records in one `Records`
 *   array), `content-type: application/json`, `x-shardgate-event-id` (the ids, comma-separated),
 *   `x-shardgate-signature: sha256=<hex HMAC-SHA256 of the body with the destination's secret>`,
 *   and with `cloudEvents` the CloudEvents 1.0 binary-mode headers; any 2xx acknowledges.
 * - Queue: the destination's rows in one sendBatch (each message `{ Records: [...] }` as JSON).
 * - A destination that hangs costs one timeout (`timeoutMs`, an AbortSignal) per run and the
 *   rows of one batch in memory; destinations are sent to side by side, so one never holds
 *   another back, and client requests never wait on any (the alarm is not in their path).
 */
import type { EventDestination, NotificationSettings } from '../model/notification-settings.ts';
import { errorMessage } from '../model/error-message.ts';
import type { OutboxRow, SqlOutbox } from './sql-outbox.ts';

/** Sends one destination's rows in order; answers how many were acknowledged, and the error that stopped it. */
export type Sender = (rows: OutboxRow[], signal: AbortSignal) => Promise<{ sent: number; error?: string }>;

export interface DeliveryOptions {
  /** Aborts every send in flight (tests: a destination that hangs, without waiting for the timeout). */
  signal?: AbortSignal;
  fetch?: typeof fetch;
}

const encoder = new TextEncoder();

/** Imported signing keys by secret: one per destination (bounded by the config). */
const signingKeys = new Map<string, Promise<CryptoKey>>();

/** Hex of HMAC-SHA256(secret, body). */
export async function signature(secret: string, body: string): Promise<string> {
  let key = signingKeys.get(secret);
  if (!key) {
    if (signingKeys.size >= 64) signingKeys.clear(); // secrets rotated many times: start over
    key = crypto.subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    signingKeys.set(secret, key);
  }
  return hexOf(await crypto.subtle.sign('HMAC', await key, encoder.encode(body)));
}

function hexOf(mac: ArrayBuffer): string {
  return Array.from(new Uint8Array(mac), (b) => b.toString(16).padStart(2, '0')).join('');
}

/** The sender of a destination as the config declares it (undefined: not declared any more, or its binding or secret is missing). */
export function senderFor(destination: EventDestination | undefined, env: Record<string, unknown>, options: DeliveryOptions = {}): Sender | string {
  if (destination === undefined) return 'the destination is not declared in notifications.destinations';
  if ('queue' in destination) {
    const queue = env[destination.queue] as Queue<unknown> | undefined;
    if (!queue || typeof queue.sendBatch !== 'function') return `no Queue binding ${destination.queue}`;
    return async (rows) => {
      try {
        await queue.sendBatch(rows.map((r) => ({ body: JSON.parse(r.body) as unknown, contentType: 'json' as const })));
        return { sent: rows.length };
      } catch (err) {
        return { sent: 0, error: `queue ${destination.queue}: ${errorMessage(err)}` };
      }
    };
  }
  const secret = destination.secret ? (env[destination.secret] as string | undefined) : destination.secretValue;
  if (destination.secret && typeof secret !== 'string') return `the Worker secret ${destination.secret} is not set`;
  const send = options.fetch ?? fetch;
  const perPost = destination.recordsPerPost ?? 1;
  return async (rows, signal) => {
    let sent = 0;
    for (const post of posts(rows, perPost)) {
      const ids = post.rows.map((r) => r.event_id).join(',');
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        'x-shardgate-event-id': ids,
        'x-shardgate-sequencer': post.rows.map((r) => r.sequencer).join(','),
      };
      if (secret) headers['x-shardgate-signature'] = `sha256=${await signature(secret, post.body)}`;
      if (destination.cloudEvents) Object.assign(headers, cloudEventHeaders(post.rows[0]!));
      try {
        // A redirect is not followed (it would send the event where the config does not say): it fails.
        const res = await send(destination.webhook, { method: 'POST', headers, body: post.body, signal, redirect: 'manual' });
        await res.body?.cancel(); // nothing of the answer is kept but its status
        if (res.status < 200 || res.status > 299) return { sent, error: `HTTP ${res.status}` };
      } catch (err) {
        return { sent, error: signal.aborted ? 'timed out' : errorMessage(err) };
      }
      sent += post.rows.length;
    }
    return { sent };
  };
}

const RECORDS_OPEN = '{"Records":[';

/**
 * The POSTs of a webhook's rows, in order: one per row when `perPost` is 1 (AWS's one record per
 * message); otherwise consecutive event rows merged into `{"Records":[...]}` of up to `perPost`
 * records, a message of another shape (the s3:TestEvent) alone. A POST is acknowledged or not as a
 * whole, so its rows are delivered together or retried together.
 */
export function posts(rows: OutboxRow[], perPost: number): { rows: OutboxRow[]; body: string }[] {
  const out: { rows: OutboxRow[]; body: string }[] = [];
  let group: OutboxRow[] = [];
  const flush = () => {
    if (group.length === 0) return;
    // Each body is eventBody's `{"Records":[record]}`: its record is the text between the brackets.
    const records = group.map((r) => r.body.slice(RECORDS_OPEN.length, -2));
    out.push({ rows: group, body: group.length === 1 ? group[0]!.body : `${RECORDS_OPEN}${records.join(',')}]}` });
    group = [];
  };
  for (const r of rows) {
    if (!r.body.startsWith(RECORDS_OPEN) || !r.body.endsWith(']}')) {
      flush();
      out.push({ rows: [r], body: r.body });
      continue;
    }
    group.push(r);
    if (group.length >= perPost) flush();
  }
  flush();
  return out;
}

/** CloudEvents 1.0 binary mode: the body stays AWS's, the headers say what it is. */
function cloudEventHeaders(r: OutboxRow): Record<string, string> {
  const bucket = (JSON.parse(r.body) as { Records?: { s3: { bucket: { name: string } } }[]; Bucket?: string }).Records?.[0]?.s3.bucket.name;
  return {
    'ce-specversion': '1.0',
    'ce-type': `com.amazonaws.${r.event_name.replace(/^s3:/, 's3.').replace(/:/g, '.')}`,
    'ce-source': `shardgate/${bucket ?? ''}`,
    'ce-id': r.event_id,
    'ce-time': new Date(r.created).toISOString(),
    ...(r.key ? { 'ce-subject': r.key } : {}),
  };
}

/**
 * One run over the partition's due rows at `now`; `atomic` runs a step in one transaction.
 * Answers when the next run is due (null: nothing waits).
 */
export async function deliverOutbox(
  outbox: SqlOutbox,
  settings: NotificationSettings,
  env: Record<string, unknown>,
  now: number,
  atomic: <T>(fn: () => T) => T,
  options: DeliveryOptions = {},
): Promise<number | null> {
  const due = atomic(() => outbox.due(now, settings.batchSize));
  await Promise.all(
    due.map(async ({ destination, rows }) => {
      const sender = senderFor(settings.destinations[destination], env, options);
      if (typeof sender === 'string') {
        atomic(() => outbox.failed(destination, rows[0]!.id, sender, now, settings));
        return;
      }
      const timeout = AbortSignal.timeout(settings.timeoutMs);
      const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout;
      const outcome = await sender(rows, signal);
      atomic(() => {
        outbox.delivered(
          destination,
          rows.slice(0, outcome.sent).map((r) => r.id),
          now,
        );
        if (outcome.error !== undefined && rows[outcome.sent]) outbox.failed(destination, rows[outcome.sent]!.id, outcome.error, now, settings);
      });
    }),
  );
  return atomic(() => outbox.nextDue());
}
