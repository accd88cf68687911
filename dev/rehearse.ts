/**
 * `npm run rehearse [-- -c FILE] [--port N] [--cron-seconds N]`: the production config run
 * locally as a deployed gateway over s3rver backends (rehearsal.ts), until Ctrl-C or `quit`.
 * Prints the endpoint, the client key with the secret it was given (for the verification
 * commands of docs/DEPLOY.md), the encryption keys it made (SHARDGATE_KEYS, so that a rescue can
 * be rehearsed too) and every backend's port; reads operator commands from the terminal to stop,
 * start and wipe a backend (an outage rehearsed). The cron runs every --cron-seconds (default
 * 60). On exit (quit, Ctrl-C, SIGTERM) everything it stored is removed. -c takes a config
 * anywhere: one whose `main` is not next to it runs this checkout's Worker.
 */
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { CONTROL_HELP, startRehearsal } from './rehearsal.ts';
import { errorMessage } from '../worker/model/error-message.ts';

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
  closing ??= r.close().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(`rehearsal: stopped, what it stored removed; the gateway did not stop cleanly: ${errorMessage(err)}`);
      process.exit(1);
    },
  );
  return closing;
};
// wrangler's Miniflare handles SIGINT and SIGTERM itself and exits the process at once, so the
// rehearsal's own handler never ran: Ctrl-C left every s3rver's data and the Worker's state in
// the temporary directory. The rehearsal takes both signals over: the first stops everything
// (workerd included) and removes what it stored; a second exits at once, leaving it.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.removeAllListeners(signal);
  process.on(signal, () => {
    if (closing) process.exit(130);
    console.log('stopping: removing what the rehearsal stored (press Ctrl-C again to exit at once, leaving it)');
    void stop();
  });
}

const endpoint = `http://127.0.0.1:${r.gateway.port}`;
// The first key is the clients' (S3); a key named *admin* is the operator's (status, admin API).
const key = r.credentials[0];
const admin = r.credentials.find((c) => /admin/.test(c.accessKeyId));
console.log(
  [
    '',
    `shardgate rehearsal of ${configFile ?? 'wrangler.production.toml'}: ${endpoint} (run as deployed; S3 backends are local s3rver processes)`,
    key
      ? `export ENDPOINT=${endpoint} AWS_ACCESS_KEY_ID=${key.accessKeyId} AWS_SECRET_ACCESS_KEY=${key.secretAccessKey} AWS_DEFAULT_REGION=${r.region}`
      : 'no client access key with a secret in this config',
    ...(admin ? [`export ADMIN_KEY_ID=${admin.accessKeyId} ADMIN_SECRET=${admin.secretAccessKey}`] : []),
    'then the verification commands of docs/DEPLOY.md (step 10).',
    // The encryption keys the rehearsal made, as shardgate rescue and verify read them: a rescue of
    // these backends (docs/OPERATING.md) can then open sealed objects, as the operator's would.
    ...(Object.keys(r.encryptionKeys).length
      ? [`export SHARDGATE_KEYS='${JSON.stringify(r.encryptionKeys)}'   # encryption keys, for shardgate rescue / verify`]
      : []),
    '',
    `backends (cron ${cronSeconds ? `every ${cronSeconds} s: collector, scrubber, repair sweeps` : 'off'}):`,
    await r.control('list'),
    '',
    `commands (type them here):\n${CONTROL_HELP}\nquit              stop, removing everything the rehearsal stored (Ctrl-C too)`,
    '',
  ].join('\n'),
);

const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  if (/^\s*(quit|exit)\s*$/.test(line)) return void stop();
  r.control(line).then(
    (answer) => console.log(answer),
    (err: unknown) => console.log(`failed: ${errorMessage(err)}`),
  );
});
// Without a terminal (stdin closed at once, as under nohup), the rehearsal runs until a signal.
