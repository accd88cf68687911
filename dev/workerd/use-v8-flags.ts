/**
 * Every workerd this process's Miniflare starts (wrangler's dev server, the tests' gateways and
 * test Workers, the benchmarks) runs with WORKERD_V8_FLAGS, through run-workerd.sh.
 *
 * Why: on a machine with 2 cores workerd's V8 has one background thread. A gateway under load
 * (the operator drill's `journal --upkeep`, 1 run in 12 beside another test file; a whole-suite
 * run on Node 22) stopped answering for good with its main thread at 100%: gdb showed the
 * background thread parked in a Maglev compile, waiting for the main thread to collect garbage
 * (CollectionBarrier::AwaitCollectionBackground), and the main thread inside workerd's
 * `while (pumpMsgLoop())` after a request's JavaScript (IoContext::runImpl), running cppgc's
 * low-priority incremental sweep task 4,000 times a second: while concurrent sweeping is not done
 * that task only runs finalizers and posts itself again at once, and concurrent sweeping could not
 * finish, its one thread being the parked one. No JavaScript ran again, no request was answered.
 * `--single-threaded-gc` sweeps (and marks) on the main thread only, so the sweep task does the
 * work itself and the loop ends. docs/TESTING.md ("A gateway that stopped answering") has the
 * traces and the runs before and after. Deployed Workers run on Cloudflare's own runtime and
 * platform; this is the local runtime only.
 */
import { fileURLToPath } from 'node:url';

export const WORKERD_V8_FLAGS = ['--single-threaded-gc'];

const WRAPPER = fileURLToPath(new URL('./run-workerd.sh', import.meta.url));

/**
 * Sets the environment that Miniflare reads when it starts workerd (MINIFLARE_WORKERD_PATH) and
 * the wrapper reads (the flags, the node to run its config edit, and a workerd binary someone had
 * already chosen with MINIFLARE_WORKERD_PATH). Idempotent; `SHARDGATE_WORKERD_V8_FLAGS=` (empty)
 * in the environment turns the flags off.
 */
export function useWorkerdV8Flags(env: NodeJS.ProcessEnv = process.env): void {
  // The wrapper is a shell script: on Windows workerd runs as Miniflare starts it, without flags.
  if (process.platform === 'win32' || env.MINIFLARE_WORKERD_PATH === WRAPPER) return;
  if (env.MINIFLARE_WORKERD_PATH) env.SHARDGATE_WORKERD_BINARY = env.MINIFLARE_WORKERD_PATH;
  env.MINIFLARE_WORKERD_PATH = WRAPPER;
  env.SHARDGATE_WORKERD_V8_FLAGS ??= WORKERD_V8_FLAGS.join(' ');
  env.SHARDGATE_NODE ??= process.execPath;
}
