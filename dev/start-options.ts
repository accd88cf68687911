/**
 * What `npm start` takes: `npm start -- --port 9000` or `PORT=9000 npm start` (the flag wins),
 * `--persist-to DIR` (state directory, as wrangler dev calls it; default .wrangler/state),
 * `--cron-seconds N` or SHARDGATE_CRON_SECONDS (period of the local collector and scrubber;
 * default 60, 0 turns it off), `--no-watch` (never reload: the Worker runs from a snapshot bundle
 * that edits to the sources cannot reach, local-gateway.ts; with watch, an edit reloads it and
 * cuts off the requests in flight),
 * SHARDGATE_LIFECYCLE_DAY_SECONDS (a lifecycle "day" of that many seconds, for tests; the lifecycle
 * job then also runs on its own timer, every half of such a day: local-gateway.ts).
 * A bad value is an error that says what is expected, never a silent default.
 */
import { resolve } from 'node:path';
import { DEFAULT_PORT, DEFAULT_STATE_DIR } from './paths.ts';

export interface StartOptions {
  port: number;
  stateDir: string;
  cronSeconds: number;
  watch: boolean;
  /** Seconds per lifecycle day (null: a real day). */
  lifecycleDaySeconds: number | null;
}

export const USAGE = 'usage: npm start [-- --port N] [--persist-to DIR] [--cron-seconds N] [--no-watch]   (PORT and SHARDGATE_CRON_SECONDS work too)';

export const DEFAULT_CRON_SECONDS = 60;

export function parseStartOptions(argv: string[], env: Record<string, string | undefined>): StartOptions {
  const flags = new Map<string, string>();
  let watch = true;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--no-watch') {
      watch = false;
      continue;
    }
    const m = /^--(port|persist-to|cron-seconds)(?:=(.*))?$/.exec(arg);
    if (!m) throw new Error(`unknown argument '${arg}'\n${USAGE}`);
    const value = m[2] ?? argv[++i];
    if (value === undefined) throw new Error(`--${m[1]} needs a value\n${USAGE}`);
    flags.set(m[1]!, value);
  }
  const port = integer(flags.get('port') ?? env.PORT, 'port (--port or PORT)', DEFAULT_PORT, 65535);
  const cronSeconds = integer(
    flags.get('cron-seconds') ?? env.SHARDGATE_CRON_SECONDS,
    'cron period (--cron-seconds or SHARDGATE_CRON_SECONDS)',
    DEFAULT_CRON_SECONDS,
    86_400,
  );
  const dir = flags.get('persist-to');
  const day = env.SHARDGATE_LIFECYCLE_DAY_SECONDS;
  const lifecycleDaySeconds = day === undefined || day === '' ? null : integer(day, 'lifecycle day (SHARDGATE_LIFECYCLE_DAY_SECONDS)', 0, 86_400) || null;
  return { port, stateDir: dir ? resolve(dir) : DEFAULT_STATE_DIR, cronSeconds, watch, lifecycleDaySeconds };
}

function integer(raw: string | undefined, what: string, fallback: number, max: number): number {
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) > max) throw new Error(`${what} must be an integer from 0 to ${max}, not '${raw}'\n${USAGE}`);
  return Number(raw);
}
