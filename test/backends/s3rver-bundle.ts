/**
 * s3rver and its dependencies bundled by esbuild into one file, once per test run, for the
 * s3rver processes the tests start (s3rver-child.cjs loads it when SHARDGATE_S3RVER_BUNDLE names
 * it, else `require('s3rver')`). A run starts well over a hundred of them (120 in
 * test/engine-s3rver alone), and each spent about 0.3 CPU-s resolving and compiling s3rver's 314
 * modules (koa, winston, fast-xml-parser, ...) before listening. From one bundled file that load
 * takes about half as long, and a process's start-up a third less CPU (the 2-core machine, AMD
 * EPYC, Node 20: the require 290-380 ms -> 170-240 ms, the start-up 510 -> 340 ms). Same code,
 * same s3rver: nothing is minified or replaced.
 */
import { build } from 'esbuild';
import { join } from 'node:path';
import { ROOT } from '../../dev/paths.ts';

export const S3RVER_BUNDLE_ENV = 'SHARDGATE_S3RVER_BUNDLE';

/** Writes the bundle into `dir` and returns its path: a CommonJS module exporting `{ S3rver, FilesystemStore }`. */
export async function bundleS3rver(dir: string): Promise<string> {
  const outfile = join(dir, 's3rver.cjs');
  await build({
    // One module graph for both: the child patches FilesystemStore's prototype, which the bundled
    // S3rver must be the one to use.
    stdin: {
      contents: "module.exports = { S3rver: require('s3rver'), FilesystemStore: require('s3rver/lib/stores/filesystem') };",
      resolveDir: ROOT,
      loader: 'js',
    },
    bundle: true,
    platform: 'node',
    format: 'cjs',
    outfile,
    logLevel: 'error',
  });
  return outfile;
}
