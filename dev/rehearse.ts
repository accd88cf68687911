/**
 * `npm run rehearse [-- -c FILE] [--port N]`: the production config run locally as a deployed
 * gateway over s3rver backends (rehearsal.ts), until Ctrl-C. Prints the endpoint and the client
 * key with the secret it was given, for the verification commands of docs/DEPLOY.md.
 */
import { resolve } from 'node:path';
import { startRehearsal } from './rehearsal.ts';

const args = process.argv.slice(2);
const flag = (name: string) => {
  const i = args.findIndex((a) => a === name);
  return i >= 0 ? args[i + 1] : undefined;
};
const configFile = flag('-c') ?? flag('--config');
const port = Number(flag('--port') ?? process.env.PORT ?? 8788);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error('usage: npm run rehearse [-- -c FILE] [--port N]');
  process.exit(2);
}

const r = await startRehearsal({ port, configFile: configFile ? resolve(configFile) : undefined });
const endpoint = `http://127.0.0.1:${r.gateway.port}`;
// The first key is the clients' (S3); a key named *admin* is the operator's (status, admin API).
const key = r.credentials[0];
const admin = r.credentials.find((c) => /admin/.test(c.accessKeyId));
console.log([
  '',
  `shardgate rehearsal of ${configFile ?? 'wrangler.production.toml'}: ${endpoint} (run as deployed; S3 backends are local s3rver processes)`,
  key ? `export ENDPOINT=${endpoint} AWS_ACCESS_KEY_ID=${key.accessKeyId} AWS_SECRET_ACCESS_KEY=${key.secretAccessKey} AWS_DEFAULT_REGION=${r.region}` : 'no client access key with a secret in this config',
  ...(admin ? [`export ADMIN_KEY_ID=${admin.accessKeyId} ADMIN_SECRET=${admin.secretAccessKey}`] : []),
  'then the verification commands of docs/DEPLOY.md (step 10); Ctrl-C stops.',
  '',
].join('\n'));

const stop = () => r.close().then(() => process.exit(0), () => process.exit(1));
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
