/**
 * The Worker bundled once with esbuild into a private temp dir: a snapshot that edits to the
 * sources do not reach. wrangler bundles in watch mode and rebuilds when a bundled file changes,
 * whatever `dev.watch` says (wrangler 4.86), which reloads the Worker and cuts off the requests in
 * flight. So every run that must not reload (`npm start --no-watch`, the tests' gateways, the
 * benchmarks) hands wrangler this bundle, unbundled (`build: { bundle: false, moduleRoot: dir }`).
 * Unbundled, wrangler still watches the entry's directory: nothing may write below `dir`, so
 * persisted state lives elsewhere. The coder's .wasm imports are copied next to the bundle and
 * stay module imports, which wrangler's default rules load as CompiledWasm.
 */
import { build, type Plugin } from 'esbuild';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { copyFile, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';

export interface WorkerBundle {
  /** Private temp dir: worker.mjs, its .wasm modules, and wrangler.toml when one was given. */
  dir: string;
  /** The bundle, `dir`/worker.mjs. */
  entry: string;
  /** sha256 of the bundle: exactly which code ran. */
  sha256: string;
  dispose(): Promise<void>;
}

export interface BundleOptions {
  /** Extra esbuild plugins, run before the .wasm one (what-if edits, instrumented builds). */
  plugins?: Plugin[];
  /** Text of a wrangler.toml to write next to the bundle (see snapshotWranglerToml). */
  wranglerToml?: string;
  /** Name prefix of the temp dir. */
  prefix?: string;
  /** Files copied next to the bundle when they exist (a config's .dev.vars, which wrangler reads from the config's dir). */
  alongside?: string[];
}

/**
 * The environment variable naming a bundle made once for a whole test run
 * (test/support/worker-bundle.global-setup.ts): its dir, which also records the entry it was made
 * from (`entry.txt`). A bundle of that entry with no plugins is then a copy of it instead of
 * another esbuild run (about 1 CPU-second each; the suite starts some fifty gateways).
 */
export const PREBUILT_BUNDLE_ENV = 'SHARDGATE_PREBUILT_BUNDLE';
const PREBUILT_ENTRY_FILE = 'entry.txt';

/** Bundles the Worker at `entry` (an absolute path) for workerd. */
export async function bundleWorker(entry: string, o: BundleOptions = {}): Promise<WorkerBundle> {
  const dir = await mkdtemp(join(tmpdir(), o.prefix ?? 'shardgate-worker-'));
  const dispose = () => rm(dir, { recursive: true, force: true });
  try {
    const out = join(dir, 'worker.mjs');
    const prebuilt = o.plugins?.length ? null : prebuiltBundleOf(entry);
    if (prebuilt) {
      for (const file of await readdir(prebuilt)) if (file === 'worker.mjs' || file.endsWith('.wasm')) await copyFile(join(prebuilt, file), join(dir, file));
    } else
      await build({
        entryPoints: [entry],
        outfile: out,
        bundle: true,
        format: 'esm',
        platform: 'neutral',
        target: 'es2022',
        mainFields: ['module', 'main'],
        conditions: ['workerd', 'worker', 'import'],
        external: ['node:*', 'cloudflare:*'],
        plugins: [...(o.plugins ?? []), wasmAlongside(dir)],
        logLevel: 'error',
      });
    if (o.wranglerToml !== undefined) await writeFile(join(dir, 'wrangler.toml'), o.wranglerToml);
    for (const file of o.alongside ?? []) if (existsSync(file)) await copyFile(file, join(dir, basename(file)));
    const sha256 = createHash('sha256')
      .update(await readFile(out))
      .digest('hex');
    return { dir, entry: out, sha256, dispose };
  } catch (err) {
    await dispose();
    throw err;
  }
}

/** Makes the run-wide bundle of `entry` in `dir` (an empty dir of the caller's) that bundleWorker copies while PREBUILT_BUNDLE_ENV names `dir`. */
export async function prebuildBundle(entry: string, dir: string): Promise<void> {
  const made = await bundleWorker(entry);
  try {
    for (const file of await readdir(made.dir)) await copyFile(join(made.dir, file), join(dir, file));
    await writeFile(join(dir, PREBUILT_ENTRY_FILE), resolve(entry));
  } finally {
    await made.dispose();
  }
}

function prebuiltBundleOf(entry: string): string | null {
  const dir = process.env[PREBUILT_BUNDLE_ENV];
  if (!dir) return null;
  try {
    return readFileSync(join(dir, PREBUILT_ENTRY_FILE), 'utf8') === resolve(entry) ? dir : null;
  } catch {
    return null;
  }
}

/**
 * A wrangler config file and the Worker it names: `entry`, the absolute path of its `main`;
 * `snapshot`, its text with every `main` pointing at a bundle next to it (written into the
 * bundle's dir, so edits to the file do not reach a run either); `alongside`, the files wrangler
 * reads from the config's dir (local secrets and variables), to copy next to the snapshot.
 */
export function snapshotWranglerToml(configPath: string): { entry: string; snapshot: string; alongside: string[] } {
  const text = readFileSync(configPath, 'utf8');
  const main = /^main\s*=\s*"([^"]+)"/m.exec(text)?.[1];
  if (!main) throw new Error(`${configPath} names no main`);
  const at = dirname(configPath);
  return {
    entry: resolve(at, main),
    snapshot: text.replace(/^main\s*=.*$/gm, 'main = "worker.mjs"'),
    alongside: ['.dev.vars', '.env'].map((f) => join(at, f)),
  };
}

/** Copies the coder's .wasm imports next to the bundle and leaves them as module imports. */
function wasmAlongside(outDir: string): Plugin {
  return {
    name: 'wasm-alongside',
    setup(b) {
      b.onResolve({ filter: /\.wasm$/ }, async (args) => {
        const source = resolve(args.resolveDir, args.path);
        await copyFile(source, join(outDir, basename(source)));
        return { path: `./${basename(source)}`, external: true };
      });
    },
  };
}
