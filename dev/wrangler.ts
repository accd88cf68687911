/**
 * wrangler's API, loaded with `require`. wrangler ships one CommonJS file of about 10 MB; an ES
 * `import` of it makes Node detect its module format and scan it for named exports before running
 * it, which costs more than half again the load itself (Node 20, 2-core AMD EPYC: about 1.8 CPU-s
 * imported, 1.1 required; Node 22: 1.45 and 1.05). Every test file that starts a gateway loads
 * it, and so does `npm start`: the dev room and the tests import wrangler from here, never
 * `from 'wrangler'` (types may be imported from there: `import type` loads nothing). The CLI's
 * `check-deploy` (cli/, which may not import dev/) imports it itself: it runs once per command.
 */
import { createRequire } from 'node:module';

export const wrangler = createRequire(import.meta.url)('wrangler') as typeof import('wrangler');
