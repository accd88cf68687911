/**
 * `npm run backend -- down ID | up ID | list [--port N]`: takes one backend of the running local
 * gateway (`npm start`) down, brings it back, or lists them, for the drills of docs/OPERATING.md.
 * It calls the admin API's local-backend route (worker/app/local-backend-switch.ts) on
 * http://127.0.0.1:PORT (--port, else PORT, else 8787), signed with the local config's key.
 * Down, the backend refuses every call as an unreachable one does; the status, the metrics and
 * the repair queue see an outage. A reload of the Worker brings every backend back up.
 */
import { AwsClient } from 'aws4fetch';
import { pathToFileURL } from 'node:url';
import { devConfigSource, inlineCredential, readDevConfig } from './dev-config.ts';
import { DEFAULT_PORT } from './paths.ts';
import { errorMessage } from '../worker/model/error-message.ts';

const USAGE = 'usage: npm run backend -- down ID | up ID | list [--port N]   (PORT works too)';

export interface BackendCommand {
  /** Undefined lists. */
  change?: { id: string; state: 'down' | 'up' };
  port: number;
}

export function parseBackendCommand(argv: string[], env: Record<string, string | undefined>): BackendCommand {
  const args = [...argv];
  let port = env.PORT ? Number(env.PORT) : DEFAULT_PORT;
  const at = args.findIndex((a) => a === '--port' || a.startsWith('--port='));
  if (at >= 0) {
    const [flag] = args.splice(at, 1);
    port = Number(flag!.includes('=') ? flag!.slice('--port='.length) : args.splice(at, 1)[0]);
  }
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`the port must be an integer from 1 to 65535\n${USAGE}`);
  const [verb, id, ...rest] = args;
  if (rest.length) throw new Error(`unexpected '${rest.join(' ')}'\n${USAGE}`);
  if (verb === 'list' && id === undefined) return { port };
  if ((verb === 'down' || verb === 'up') && id) return { change: { id, state: verb }, port };
  throw new Error(USAGE);
}

/** Sends the command; answers each backend's switch (id -> up/down), or throws with the gateway's message. */
export async function runBackendCommand(
  command: BackendCommand,
  credential: { accessKeyId: string; secretAccessKey: string },
  region: string,
): Promise<Record<string, string>> {
  const url = new URL(`http://127.0.0.1:${command.port}/_shardgate/admin/local-backend`);
  if (command.change) {
    url.searchParams.set('id', command.change.id);
    url.searchParams.set('state', command.change.state);
  }
  const signer = new AwsClient({ ...credential, service: 's3', region, retries: 0 });
  const res = await signer.fetch(url, { method: 'POST' }).catch((err: Error) => {
    throw new Error(`no local gateway on ${url.origin} (${err.message}): start it with npm start, or give its --port`);
  });
  const text = await res.text();
  if (!res.ok) {
    // The admin API answers errors as JSON ({code, message}); anything else is shown as it came.
    const error = (() => {
      try {
        const e = JSON.parse(text) as { code?: string; message?: string };
        return e.code ? `${e.code}: ${e.message ?? ''}` : text;
      } catch {
        return text;
      }
    })();
    throw new Error(`${url.origin} answered ${res.status} ${error.slice(0, 500)}`);
  }
  return (JSON.parse(text) as { backends: Record<string, string> }).backends;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  try {
    const command = parseBackendCommand(process.argv.slice(2), process.env);
    const config = readDevConfig(devConfigSource(process.env));
    const credential = inlineCredential(config);
    if (!credential) throw new Error('the local config has no access key with an inline secret to sign with');
    const states = await runBackendCommand(command, credential, config.region);
    for (const [id, state] of Object.entries(states)) console.log(`${id.padEnd(16)} ${state === 'down' ? 'DOWN' : 'up'}`);
  } catch (err) {
    console.error(errorMessage(err));
    process.exit(1);
  }
}
