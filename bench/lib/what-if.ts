/**
 * What-if builds: the benchmark can bundle the gateway with a proposed change applied to the
 * source text at bundle time (the files in the repo are never touched), to measure a fix before
 * anyone makes it. `npm run bench -- --what-if pull-body` runs the whole matrix that way.
 * A patch whose target text is gone (the fix landed, or the code moved) fails the build loudly.
 *
 * pull-body (history: applies to the gate before commit 15d603a, which landed the same idea as
 * worker/auth/large-pieces.ts): the gate handed the body on through `pipeThrough(TransformStream)`,
 * whose default reader yields ~4 KiB pieces in workerd; every later stage then ran per 4 KiB. The
 * patch pulls 1 MiB pieces with a BYOB readAtLeast instead (bench/fixtures/pull-body.ts) and
 * runs the same verifier / aws-chunked decoder over them. bench/results/what-if-0.json.
 *
 * byob-backend-get: the S3 backend's read body (shapeBody over a fetch response) is read with a
 * default reader, ~4 KiB per read; ShardReader then copies 4 KiB at a time. The patch makes
 * shapeBody pull 1 MiB pieces from the fetch body with BYOB readAtLeast.
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Plugin } from 'esbuild';

const PULL_BODY = fileURLToPath(new URL('../fixtures/pull-body.ts', import.meta.url));

interface Edit {
  file: string;
  find: string;
  replace: string;
}

const WHAT_IFS: Record<string, Edit[]> = {
  'pull-body': [
    {
      file: 'worker/auth/payload.ts',
      find: 'request.body.pipeThrough(decoder.transformStream())',
      replace: '__pullPieces(request.body, (p) => decoder.push(p), () => decoder.finish())',
    },
    {
      file: 'worker/auth/payload.ts',
      find: 'request.body.pipeThrough(plainBodyVerifier(checks))',
      replace: '__pullVerified(request.body, checks)',
    },
    {
      file: 'worker/auth/payload.ts',
      find: "import { plainBodyVerifier, verifyEmptyBody } from './plain-body.ts';",
      replace: `import { plainBodyVerifier, verifyEmptyBody, __pullVerified } from './plain-body.ts';\nimport { pullPieces as __pullPieces } from ${JSON.stringify(PULL_BODY)};`,
    },
    {
      file: 'worker/auth/plain-body.ts',
      find: '/** A pass-through stream that errors at its end unless every declared check holds. */',
      replace: `import { pullPieces as __pullPieces } from ${JSON.stringify(PULL_BODY)};
export function __pullVerified(body: ReadableStream<Uint8Array>, checks: PlainBodyChecks): ReadableStream<Uint8Array> {
  const verifier = new PlainBodyVerifier(checks);
  const settleFailed = (err: unknown) => { checks.checksum?.settle?.(null); throw err; };
  return __pullPieces(body, (piece) => {
    try { verifier.update(piece); } catch (err) { settleFailed(err); }
    return piece;
  }, () => {
    try { verifier.finish(); } catch (err) { settleFailed(err); }
    checks.checksum?.settle?.(checks.checksum.expectedBase64);
  });
}
/** A pass-through stream that errors at its end unless every declared check holds. */`,
    },
  ],
};

WHAT_IFS['byob-backend-get'] = [
  {
    file: 'backends/streams.ts',
    find: 'export function shapeBody(source: ReadableStream<Uint8Array>, o: ShapeOptions): ReadableStream<Uint8Array> {\n  const reader = source.getReader();',
    replace: `import { bigPieces as __bigPieces } from ${JSON.stringify(PULL_BODY)};
export function shapeBody(source: ReadableStream<Uint8Array>, o: ShapeOptions): ReadableStream<Uint8Array> {
  const reader = __bigPieces(source).getReader();`,
  },
];

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
