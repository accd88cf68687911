/**
 * Where the Worker's own workerd listens (wrangler calls it the user worker), so that the local
 * front and the test harnesses send requests there and skip wrangler's proxy worker.
 *
 * Why: workerd closes a keep-alive connection after 5 s idle, and the proxy worker's fetch reuses
 * its pooled connection to the user worker without retrying when that close races a new request.
 * The client then gets a plain-text 500 "Network connection lost": measured here, about one
 * request in ten that arrives 5.0 s after the previous one. SDKs retry a 500, but not every
 * client does, and a test that meets it fails for nothing. The front opens a connection to this
 * address per request and never reuses one (front.ts), so the hop left has no such race.
 *
 * How: wrangler 4.86's DevEnv routes every controller event through `dispatch`; `reloadComplete`
 * carries `proxyData.userWorkerUrl`. Between `reloadStart` and `reloadComplete` (a reload in
 * `npm start`'s watch mode) requests wait, as the proxy worker makes them wait. The address is
 * wrangler internals: a wrangler that no longer sends it leaves requests on the proxy worker's
 * address (`fallback`), with one warning.
 */
import type { unstable_DevEnv, unstable_startWorker } from 'wrangler';
import { wrangler } from './wrangler.ts';
import { useWorkerdV8Flags } from './workerd/use-v8-flags.ts';

type DevEnv = InstanceType<typeof unstable_DevEnv>;
type DevEvent = Parameters<DevEnv['dispatch']>[0];
type StartInput = NonNullable<Parameters<typeof unstable_startWorker>[0]>;
type StartedWorker = Awaited<ReturnType<typeof unstable_startWorker>>;

export interface DirectWorker {
  /** What unstable_startWorker returns (dispose() stops it). */
  worker: StartedWorker;
  /** worker.url: wrangler's proxy worker in front of the Worker (what `wrangler dev` users reach). */
  proxyUrl: URL;
  /** The Worker's own workerd, now (waits while the Worker reloads). */
  address(): Promise<URL>;
}

/**
 * unstable_startWorker's run (wrangler's DevEnv) with the Worker's own address settled: resolves
 * once wrangler reports the Worker ready. `log` gets the fallback warning, if any.
 */
export async function startDirectWorker(input: StartInput, log: (line: string) => void): Promise<DirectWorker> {
  useWorkerdV8Flags();
  const devEnv = new wrangler.unstable_DevEnv();
  const address = new UserWorkerAddress(devEnv);
  const worker = await devEnv.startWorker(input);
  try {
    await worker.ready;
    const proxyUrl = await worker.url;
    await address.settle(proxyUrl, log);
    return { worker, proxyUrl, address: () => address.get() };
  } catch (err) {
    await worker.dispose().catch(() => {});
    throw err;
  }
}

/** How long after wrangler says ready to wait for the first address before falling back. */
const FIRST_ADDRESS_MS = 10_000;

class UserWorkerAddress {
  private latest: URL | null = null;
  private waiting: Array<(url: URL) => void> = [];
  private reloading = true;
  private fallback: URL | null = null;

  /** Listens on `devEnv`'s message bus; call before starting the Worker. */
  constructor(devEnv: DevEnv) {
    const dispatch = devEnv.dispatch.bind(devEnv);
    devEnv.dispatch = (event: DevEvent) => {
      this.observe(event);
      dispatch(event);
    };
  }

  /**
   * Settles the address once wrangler's proxy is ready at `proxyUrl`: waits for the user worker's
   * address, or uses `proxyUrl` (with a warning through `log`) if wrangler never sends one.
   */
  async settle(proxyUrl: URL, log: (line: string) => void): Promise<URL> {
    const first = await Promise.race([this.get(), new Promise<null>((r) => setTimeout(() => r(null), FIRST_ADDRESS_MS).unref())]);
    if (first) return first;
    log(`wrangler did not report the Worker's own address; requests go through its proxy worker (${proxyUrl.href})`);
    this.useFallback(proxyUrl);
    return proxyUrl;
  }

  /** The address to send the next request to (waits while the Worker reloads). */
  get(): Promise<URL> {
    if (this.fallback) return Promise.resolve(this.fallback);
    if (this.latest && !this.reloading) return Promise.resolve(this.latest);
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private observe(event: DevEvent): void {
    if (event.type === 'reloadStart') this.reloading = true;
    if (event.type === 'reloadComplete') {
      const { protocol, hostname, port } = event.proxyData.userWorkerUrl;
      this.latest = new URL(`${protocol}//${hostname}:${port}`);
      this.release(this.latest);
    }
    // A reload that failed leaves the previous Worker serving: requests go on to it.
    if (event.type === 'error' && this.latest && event.source === 'LocalRuntimeController') this.release(this.latest);
  }

  private useFallback(url: URL): void {
    this.fallback = url;
    this.release(url);
  }

  private release(url: URL): void {
    this.reloading = false;
    for (const resolve of this.waiting.splice(0)) resolve(url);
  }
}
