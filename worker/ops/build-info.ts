/**
 * Which gateway is answering: the version of package.json, baked into the bundle when it is built
 * (wrangler's esbuild and vite inline the JSON import), and when the answering isolate started.
 * The start is taken when the gateway is first built in the isolate (its first request or event),
 * not at module evaluation: the Workers clock does not advance during startup, so a timestamp
 * taken there says nothing.
 */
import pkg from '../../package.json';

export const VERSION: string = pkg.version;

let startedAt: number | null = null;

/** When this isolate started serving: fixed by the first call. */
export function isolateStartedAt(now: () => number = Date.now): number {
  startedAt ??= now();
  return startedAt;
}
