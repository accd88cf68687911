/**
 * The gateway as `npm start` serves it, for the command-line client smoke tests: the repo's
 * wrangler.toml with its embedded config (six local R2 buckets as one 4+2 pool, the SQLite
 * Durable Object catalog, the development key) in workerd, behind the Node front
 * (dev/local-gateway.ts: it answers `Expect: 100-continue`, which awscli sends on every PUT), on a
 * random loopback port with a fresh state directory, so every run starts empty and runs cannot
 * see each other. File watching is off: other people edit the tree while tests run, and a reload
 * in the middle of an upload would fail it for no reason of ours. The local cron is off too: the
 * tests read what they wrote, nothing more.
 *
 * `GatewayObserver` is a second, independent view of the gateway (aws4fetch, SigV4) used to check
 * what a client really did: the ETag shows whether an upload went multipart and in how many
 * parts; a 404 shows that a delete really happened.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AwsClient } from 'aws4fetch';
import { startLocalGateway } from '../../dev/local-gateway.ts';

/** The development access key embedded in wrangler.toml. */
export const DEV_CREDENTIALS = { accessKeyId: 'shardgate-dev', secretAccessKey: 'shardgate-dev-secret' };
export const DEV_REGION = 'us-east-1';

export interface RunningGateway {
  url: URL;
  dispose(): Promise<void>;
}

/** Starts the gateway with its state (R2 buckets, Durable Objects) under `stateDir/`. */
export async function startGateway(stateDir: string): Promise<RunningGateway> {
  mkdirSync(stateDir, { recursive: true });
  const gateway = await startLocalGateway({ port: 0, hosts: ['127.0.0.1'], stateDir: join(stateDir, 'wrangler-state'), cronSeconds: 0 });
  return { url: gateway.url, dispose: () => gateway.close() };
}

export class GatewayObserver {
  private readonly signer = new AwsClient({ ...DEV_CREDENTIALS, service: 's3', region: DEV_REGION, retries: 0 });

  constructor(private readonly url: URL) {}

  /** Status and ETag (quotes kept) of a HEAD on the object. */
  async headObject(bucket: string, key: string): Promise<{ status: number; etag: string | null }> {
    const res = await this.signer.fetch(this.objectUrl(bucket, key), { method: 'HEAD' });
    return { status: res.status, etag: res.headers.get('etag') };
  }

  /** A GET signed with SigV4 over every header given (aws4fetch signs Accept-Encoding, as
   *  aws-sdk-go v1 does); the body is read whole (decompressed if the response is gzip). */
  async getObject(bucket: string, key: string, headers: Record<string, string>): Promise<{ status: number; headers: Headers; body: Buffer }> {
    const res = await this.signer.fetch(this.objectUrl(bucket, key), { method: 'GET', headers });
    return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
  }

  /**
   * Undefined when the gateway answers a HEAD within `ms`, else why not. A wedged gateway would
   * otherwise cost every later test its whole timeout (each client retries for minutes): the
   * file's guard (clients.test.ts) fails them at once instead, saying so.
   */
  async unresponsive(ms: number): Promise<string | undefined> {
    try {
      await this.signer.fetch(new URL('/cli-liveness-probe', this.url), { method: 'HEAD', signal: AbortSignal.timeout(ms) });
      return undefined;
    } catch (err) {
      return `the gateway did not answer a HEAD within ${ms / 1000} s (${(err as Error).message}); ${await workerdCpu()}`;
    }
  }

  /** Status of a HEAD on the bucket (200 while it exists, 404 once removed). */
  async headBucket(bucket: string): Promise<number> {
    const res = await this.signer.fetch(new URL(`/${bucket}`, this.url), { method: 'HEAD' });
    return res.status;
  }

  private objectUrl(bucket: string, key: string): URL {
    return new URL(`/${bucket}/${key.split('/').map(encodeURIComponent).join('/')}`, this.url);
  }
}

/**
 * CPU use of every workerd process over two seconds, for the message of a wedged gateway: a
 * workerd at 100% is spinning (a loop that never yields), one at 0% is waiting on something.
 */
async function workerdCpu(): Promise<string> {
  const sample = () => {
    const ticks = new Map<string, number>();
    for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        if (!stat.includes('(workerd)')) continue;
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        ticks.set(pid, Number(fields[11]) + Number(fields[12])); // utime + stime
      } catch {
        // gone meanwhile
      }
    }
    return ticks;
  };
  try {
    const before = sample();
    await new Promise((r) => setTimeout(r, 2000));
    const after = sample();
    const lines: string[] = [];
    for (const [pid, t] of after) {
      const busy = Math.round((t - (before.get(pid) ?? t)) / 2);
      lines.push(`workerd ${pid}: ${busy}% CPU, ${Math.round(t / 100)} s in all${busy >= 80 ? `; where it spins: ${await nativeStack(pid)}` : ''}`);
    }
    return lines.length ? lines.join(', ') : 'no workerd process found';
  } catch (err) {
    return `workerd CPU unknown (${(err as Error).message})`;
  }
}

/**
 * The function names of a spinning workerd's innermost frames (gdb, which .ci/run installs; the
 * binary keeps its symbols): native code (SQLite, kj) or V8 running JavaScript tells which kind of
 * loop it is.
 */
function nativeStack(pid: string): Promise<string> {
  return new Promise((resolve) => {
    execFile('gdb', ['-p', pid, '-batch', '-ex', 'bt 30'], { timeout: 60_000, maxBuffer: 4 << 20 }, (err, stdout) => {
      const frames = String(stdout ?? '')
        .split('\n')
        .filter((l) => /^#\d+/.test(l))
        .map((l) =>
          l
            .replace(/^#(\d+)\s+(0x[0-9a-f]+ in )?/, '#$1 ')
            .replace(/\s*\(.*$/, '')
            .slice(0, 100),
        );
      resolve(frames.length ? frames.join(' | ') : `no stack (${err ? err.message.split('\n')[0] : 'gdb printed none'})`);
    });
  });
}
