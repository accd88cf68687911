/**
 * `npm run rehearse [-- -c FILE] [--port N] [--cron-seconds N]`: the production config run
 * locally as a deployed gateway over s3rver backends (rehearsal.ts), until Ctrl-C or `quit`.
 * Prints the endpoint, the client key with the secret it was given (for the verification
 * commands of docs/DEPLOY.md) and every backend's port; reads operator commands from the
 * terminal to stop, start and wipe a backend (an outage rehearsed). The cron runs every
 * --cron-seconds (default 60). On exit everything it stored is removed.
 */
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { CONTROL_HELP, startRehearsal } from './rehearsal.ts';

const args = process.argv.slice(2);
const flag = (name: string) => {
  const i = args.findIndex((a) => a === name);
  return i >= 0 ? args[i + 1] : undefined;
};
const configFile = flag('-c') ?? flag('--config');
const port = Number(flag('--port') ?? process.env.PORT ?? 8788);
const cronSeconds = Number(flag('--cron-seconds') ?? 60);
if (!Number.isInteger(port) || port < 0 || port > 65535 || !Number.isInteger(cronSeconds) || cronSeconds < 0) {
  console.error('usage: npm run rehearse [-- -c FILE] [--port N] [--cron-seconds N]');
  process.exit(2);
}

const r = await startRehearsal({ port, configFile: configFile ? resolve(configFile) : undefined, cronSeconds });
let closing: Promise<void> | undefined;
const stop = () => {
  closing ??= r.close().then(() => process.exit(0), (err: unknown) => {
    console.error(`rehearsal: could not stop cleanly: ${String((err as Error)?.message ?? err)}`);
    process.exit(1);
  });
  return closing;
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);

const endpoint = `http://127.0.0.1:${r.gateway.port}`;
// The first key is the clients' (S3); a key named *admin* is the operator's (status, admin API).
const key = r.credentials[0];
const admin = r.credentials.find((c) => /admin/.test(c.accessKeyId));
console.log([
  '',
  `shardgate rehearsal of ${configFile ?? 'wrangler.production.toml'}: ${endpoint} (run as deployed; S3 backends are local s3rver processes)`,
  key ? `export ENDPOINT=${endpoint} AWS_ACCESS_KEY_ID=${key.accessKeyId} AWS_SECRET_ACCESS_KEY=${key.secretAccessKey} AWS_DEFAULT_REGION=${r.region}` : 'no client access key with a secret in this config',
  ...(admin ? [`export ADMIN_KEY_ID=${admin.accessKeyId} ADMIN_SECRET=${admin.secretAccessKey}`] : []),
  'then the verification commands of docs/DEPLOY.md (step 10).',
  '',
  `backends (cron ${cronSeconds ? `every ${cronSeconds} s: collector, scrubber, repair sweeps` : 'off'}):`,
  await r.control('list'),
  '',
  `commands (type them here):\n${CONTROL_HELP}\nquit              stop, removing everything the rehearsal stored (Ctrl-C too)`,
  '',
].join('\n'));

const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  if (/^\s*(quit|exit)\s*$/.test(line)) return void stop();
  r.control(line).then((answer) => console.log(answer), (err: unknown) => console.log(`failed: ${String((err as Error)?.message ?? err)}`));
});
// Without a terminal (stdin closed at once, as under nohup), the rehearsal runs until a signal.
