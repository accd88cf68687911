// Registers cloudflare-workers-hook.mjs (benches that run the catalog in process: bench/encryption.ts).
import { register } from 'node:module';
register('./cloudflare-workers-hook.mjs', import.meta.url);
