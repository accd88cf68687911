/**
 * Where the local gateway lives and listens, in a module of its own: the commands and tests that
 * need only these (reset, the banner, the start options, `npm run backend`) do not load wrangler
 * and miniflare with local-gateway.ts (about 3 CPU-seconds a process).
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../', import.meta.url));
/** Where `wrangler dev` keeps local state too (R2 buckets, Durable Objects, queues). */
export const DEFAULT_STATE_DIR = join(ROOT, '.wrangler', 'state');
export const DEFAULT_PORT = 8787;
/** Both loopback addresses: clients resolve `localhost` to either. */
export const LOOPBACK_HOSTS = ['127.0.0.1', '::1'];
