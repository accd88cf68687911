// Starts and controls real s3rver processes for the S3 backend tests (see s3rver-child.cjs).
// Each server listens on a loopback port and keeps its data in a temp directory, so a stopped
// server restarted on the same port and directory serves the same blobs (as a rebooted host would).

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { S3Backend, type S3BackendOptions } from '../../backends/s3.ts';

const CHILD_SCRIPT = fileURLToPath(new URL('./s3rver-child.cjs', import.meta.url));

export class S3rverProcess {
  private child?: ChildProcess;
  port = 0;
  private dir?: string;

  /** `buckets`: the buckets it serves (default "b"; several let one process stand for several backends). */
  constructor(private readonly buckets: string[] = ['b']) {}

  /** The server's data, made on first use (a test file only collected, never run, leaves none). */
  get directory(): string {
    return (this.dir ??= mkdtempSync(join(tmpdir(), 'shardgate-s3rver-')));
  }

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Starts the server (again, on the same port and data once it has run before); resolves once
   *  it answers a real request. */
  async start(): Promise<void> {
    const child = spawn(process.execPath, ['--openssl-legacy-provider', CHILD_SCRIPT, String(this.port), this.directory, this.buckets.join(',')], {
      stdio: ['pipe', 'pipe', 'inherit'], // the child exits when its stdin closes
    });
    this.child = child;
    this.port = await new Promise<number>((resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('\n')) resolve(JSON.parse(out).port);
      });
      child.once('exit', (code) => reject(new Error(`s3rver exited early with code ${code}`)));
    });
    await this.answering(Date.now() + 15_000);
  }

  /** Waits until a ListBuckets answers 200, each try on a connection of its own (a kept-alive
   *  one would outlive a later kill of the server in this process's pool). */
  private async answering(deadline: number): Promise<void> {
    for (let last = ''; ; ) {
      last = await new Promise<string>((resolve) => {
        const req = get({ host: '127.0.0.1', port: this.port, path: '/', agent: false, timeout: 2000 }, (res) => {
          res.resume().once('end', () => resolve(String(res.statusCode)));
        });
        req.once('timeout', () => req.destroy(new Error('no answer within 2 s')));
        req.once('error', (err) => resolve((err as NodeJS.ErrnoException).code ?? err.message));
      });
      if (last === '200') return;
      if (Date.now() > deadline) throw new Error(`s3rver on port ${this.port} not answering ListBuckets: ${last}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  /** Ends the process; connections to the port are then refused. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGCONT');
    child.kill('SIGTERM');
    await exited;
    this.child = undefined;
  }

  /** Freezes the process: the kernel still accepts connections but nothing answers. */
  pause(): void {
    this.child?.kill('SIGSTOP');
  }

  resume(): void {
    this.child?.kill('SIGCONT');
  }

  /** Loses everything the server holds, as a replaced disk would: stopped, emptied, started again
   *  (same port, its bucket "b" empty). */
  async wipe(): Promise<void> {
    await this.stop();
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
    this.dir = undefined;
    await this.start();
  }

  /** Whether the process is running (stopped or never started: false). */
  get running(): boolean {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }

  async dispose(): Promise<void> {
    await this.stop();
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
  }
}

/** An S3Backend on bucket "b" of `server` (or `extra.bucket`) with s3rver's fixed credentials. */
export function s3rverBackend(server: S3rverProcess, extra: Partial<S3BackendOptions> = {}): S3Backend {
  return new S3Backend({
    id: 's3rver-a',
    domain: 'local/s3rver',
    endpoint: server.endpoint,
    bucket: 'b',
    region: 'us-east-1',
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
    ...extra,
  });
}
