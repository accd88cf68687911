/**
 * The deployment review of event notification destinations (docs/NOTIFICATIONS.md; the section's
 * schema is config.ts `notificationSettings`, the catalog reads it through
 * model/notification-settings.ts).
 */
import type { NotificationSettings } from '../model/notification-settings.ts';

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
