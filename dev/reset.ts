/**
 * `npm run reset [-- --persist-to DIR]`: deletes the local gateway's state (every bucket, object,
 * shard and catalog entry; default .wrangler/state, where `npm start` and `wrangler dev` keep
 * it). Stop the gateway first: workerd holds its files open.
 */
import { existsSync, rmSync } from 'node:fs';
import { DEFAULT_STATE_DIR } from './paths.ts';

const at = process.argv.indexOf('--persist-to');
const dir = at >= 0 && process.argv[at + 1] ? process.argv[at + 1]! : DEFAULT_STATE_DIR;
if (!existsSync(dir)) {
  console.log(`shardgate: nothing to reset (${dir} does not exist)`);
} else {
  rmSync(dir, { recursive: true, force: true });
  console.log(`shardgate: removed ${dir}: the local gateway starts empty next time`);
}
