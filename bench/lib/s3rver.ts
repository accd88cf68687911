/**
 * The separate-process backends of the benchmark: s3rver processes on loopback, one per backend
 * (and failure domain), each in its own temp directory, counting the requests it serves
 * (s3rver-child.cjs). Their CPU time is read from /proc like the gateway's.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const CHILD = fileURLToPath(new URL('./s3rver-child.cjs', import.meta.url));

export interface S3rverStats {
  requests: number;
  byMethod: Record<string, number>;
  bodyBytes: number;
  responseBytes: number;
}

export class BenchS3rver {
  readonly directory = mkdtempSync(join(tmpdir(), 'shardgate-bench-s3rver-'));
  port = 0;
  private child?: ChildProcess;
  private lines?: Interface;
  private waiting: ((line: string) => void)[] = [];

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get pid(): number {
    return this.child!.pid!;
  }

  async start(): Promise<void> {
    const child = spawn(process.execPath, ['--openssl-legacy-provider', CHILD, '0', this.directory], { stdio: ['pipe', 'pipe', 'inherit'] });
    this.child = child;
    this.lines = createInterface({ input: child.stdout! });
    this.lines.on('line', (line) => this.waiting.shift()?.(line));
    const first = await new Promise<string>((resolve, reject) => {
      this.waiting.push(resolve);
      child.once('exit', (code) => reject(new Error(`s3rver exited early with code ${code}`)));
    });
    this.port = JSON.parse(first).port;
  }

  async stats(): Promise<S3rverStats> {
    const line = new Promise<string>((resolve) => this.waiting.push(resolve));
    this.child!.stdin!.write('stats\n');
    return JSON.parse(await line);
  }

  async dispose(): Promise<void> {
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.stdin!.end();
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(this.directory, { recursive: true, force: true });
  }
}

export async function startS3rvers(n: number): Promise<BenchS3rver[]> {
  const servers = Array.from({ length: n }, () => new BenchS3rver());
  await Promise.all(servers.map((s) => s.start()));
  return servers;
}

/** A `kind: "s3"` backend config for `server` (path-style, s3rver's fixed keys, no retries). */
export function s3BackendConfig(server: BenchS3rver, i: number): object {
  return {
    id: `s3rver-${i}`,
    kind: 's3',
    domain: `local/s3rver-${i}`,
    endpoint: server.endpoint,
    bucket: 'b',
    region: 'us-east-1',
    pathStyle: true,
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
    // backends/s3-http.ts bounds a whole upload (body sent + headers) by timeoutMs, not the
    // time between body chunks: at the default 30 s a 1 GiB replica shard fails below ~36 MB/s
    // (seen in a run: replicate-3 1 GiB PUT -> 503). Generous here: the bench measures speed.
    timeoutMs: 600_000,
    retries: 0,
    faults: {},
  };
}

/**
 * A gateway config (JSON text, npm start's with memory backends: dev-config.ts
 * memoryBackendsConfig) with its backends swapped for S3 ones, one per s3rver process, same ids
 * and domains: workerd then runs the gateway alone, and the backends' CPU is their own.
 */
export function s3rverBackendsConfig(servers: BenchS3rver[], source: string): string {
  const config = JSON.parse(source) as { backends: { id: string; domain: string }[] };
  if (servers.length < config.backends.length) throw new Error(`${config.backends.length} backends, ${servers.length} s3rver processes`);
  config.backends = config.backends.map((b, i) => ({ ...s3BackendConfig(servers[i]!, i), id: b.id, domain: b.domain }));
  return JSON.stringify(config);
}
