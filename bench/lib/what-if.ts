/**
 * What-if builds: the benchmark can bundle the gateway with a proposed change applied to the
 * source text at bundle time (the files in the repo are never touched), to measure a fix before
 * anyone makes it: add an entry to WHAT_IFS, then `npm run bench -- --what-if NAME`.
 * A patch whose target text is gone (the fix landed, or the code moved) fails the build loudly.
 * The what-ifs measured so far have landed and are gone from here: pull-body (the gate reads the
 * body in 1 MiB BYOB pieces: worker/auth/body-stream.ts) and byob-backend-get (backend read
 * bodies in 1 MiB pieces: backends/streams.ts); bench/results/what-if-0.json keeps their figures.
 */
import { readFile } from 'node:fs/promises';
import type { Plugin } from 'esbuild';

interface Edit {
  file: string;
  find: string;
  replace: string;
}

const WHAT_IFS: Record<string, Edit[]> = {};

export const WHAT_IF_NAMES = Object.keys(WHAT_IFS);

/** An esbuild plugin applying the named what-ifs to the gateway's sources. */
export function whatIfPlugin(names: string[], root: string): Plugin {
  const edits = names.flatMap((n) => {
    const e = WHAT_IFS[n];
    if (!e) throw new Error(`unknown --what-if ${n} (have: ${WHAT_IF_NAMES.join(', ')})`);
    return e;
  });
  const files = new Set(edits.map((e) => e.file));
  return {
    name: 'what-if',
    setup(b) {
      b.onLoad({ filter: /\.ts$/ }, async (args) => {
        const rel = args.path.startsWith(root) ? args.path.slice(root.length).replace(/^\/+/, '') : '';
        if (!files.has(rel)) return undefined;
        let text = await readFile(args.path, 'utf8');
        for (const e of edits.filter((x) => x.file === rel)) {
          if (!text.includes(e.find)) throw new Error(`what-if: ${rel} no longer contains ${JSON.stringify(e.find)}; update bench/lib/what-if.ts`);
          text = text.replace(e.find, e.replace);
        }
        return { contents: text, loader: 'ts' };
      });
    },
  };
}
