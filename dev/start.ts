/**
 * `npm start`: the local gateway (local-gateway.ts: workerd behind the Node front, the cron on a
 * timer), then the banner (banner.ts). Options: start-options.ts. The config (SHARDGATE_CONFIG
 * from the environment, else wrangler.toml's) is validated first: an invalid one stops here with
 * the schema's message naming the field (exit 1). A config that marks a backend "retired" while the
 * catalog (the persisted state) still records shards on it is refused at start, naming the count
 * (issue 26; cli/deploy/live-fleet.ts, as `shardgate check-deploy --endpoint` does before a deploy). Ctrl-C (SIGINT) or SIGTERM stops the cron, the
 * front and workerd, in that order, and exits.
 */
import { banner } from './banner.ts';
import { ConfigError } from '../worker/config/config.ts';
import { checkDevConfig, devConfigSource, inlineCredential } from './dev-config.ts';
import { startLocalGateway } from './local-gateway.ts';
import { reviewFleetAgainstLive, type LiveBackend } from '../cli/deploy/live-fleet.ts';
import { parseStartOptions } from './start-options.ts';

let options;
try {
  options = parseStartOptions(process.argv.slice(2), process.env);
} catch (err) {
  console.error((err as Error).message);
  process.exit(2);
}
const source = devConfigSource(process.env);
let config;
try {
  config = checkDevConfig(source);
} catch (err) {
  if (!(err instanceof ConfigError)) throw err;
  console.error(
    `shardgate: the gateway config cannot be used${process.env.SHARDGATE_CONFIG === undefined ? ' (wrangler.toml [vars] SHARDGATE_CONFIG)' : ' (SHARDGATE_CONFIG from the environment)'}:\n${err.message}`,
  );
  process.exit(1);
}
// A config from the environment goes to the Worker as its SHARDGATE_CONFIG var.
const bindings = process.env.SHARDGATE_CONFIG === undefined ? undefined : { SHARDGATE_CONFIG: { type: 'plain_text' as const, value: source } };
/** The config's retired backends against what the catalog still records (issue 26). */
class FleetRefused extends Error {}
// Only the catalog knows what a backend still holds: asked once the gateway answers, before the
// cron's first run (a refused config must not run an upkeep pass: it would claim the mover's chains).
const admit = async (url: URL) => {
  if (!config.backends.some((b) => b.state === 'retired')) return;
  const status = (await (await fetch(new URL('/_shardgate/status', url))).json()) as { backends: LiveBackend[] };
  const problems = reviewFleetAgainstLive(config, status.backends);
  if (problems.length) throw new FleetRefused(`shardgate: the gateway config cannot be used with this state (${options.stateDir}):\n${problems.join('\n')}`);
};
const gateway = await startLocalGateway({
  port: options.port,
  stateDir: options.stateDir,
  cronSeconds: options.cronSeconds,
  lifecycleDaySeconds: options.lifecycleDaySeconds,
  watch: options.watch,
  logLevel: 'log',
  bindings,
  admit,
}).catch((err: NodeJS.ErrnoException) => {
  if (err instanceof FleetRefused) {
    console.error(err.message);
    process.exit(1);
  }
  if (err.code !== 'EADDRINUSE') throw err;
  console.error(`shardgate: port ${options.port} is in use (another npm start?): stop it, or pick another port: PORT=${options.port + 1} npm start`);
  process.exit(1);
});
// wrangler prints its own "Ready on" line (workerd's internal port) a moment after it is ready:
// the banner comes after it, and says which port to use.
await new Promise((r) => setTimeout(r, 300));
console.log(
  banner({
    port: gateway.port,
    workerPort: Number(gateway.workerUrl.port),
    region: config.region,
    credential: inlineCredential(config),
    stateDir: options.stateDir,
    cronSeconds: options.cronSeconds,
  }),
);

let stopping = false;
const stop = (signal: string) => {
  if (stopping) return;
  stopping = true;
  console.log(`\nshardgate: ${signal}, stopping the local gateway`);
  gateway.close().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error('shardgate: stopping failed:', err);
      process.exit(1);
    },
  );
};
process.on('SIGINT', () => stop('SIGINT'));
process.on('SIGTERM', () => stop('SIGTERM'));
