// Starts and controls real s3rver processes for the S3 backend tests (see s3rver-child.cjs).
// Each server listens on a loopback port and keeps its data in a temp directory, so a stopped
// server restarted on the same port and directory serves the same blobs (as a rebooted host would).

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { S3Backend, type S3BackendOptions } from '../../backends/s3.ts';

const CHILD_SCRIPT = fileURLToPath(new URL('./s3rver-child.cjs', import.meta.url));

export class S3rverProcess {
  private child?: ChildProcess;
  port = 0;
  readonly directory = mkdtempSync(join(tmpdir(), 'shardgate-s3rver-'));

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Starts the server (again, on the same port and data once it has run before). */
  async start(): Promise<void> {
    const child = spawn(process.execPath, ['--openssl-legacy-provider', CHILD_SCRIPT, String(this.port), this.directory], {
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

  async dispose(): Promise<void> {
    await this.stop();
    rmSync(this.directory, { recursive: true, force: true });
  }
}

/** An S3Backend on bucket "b" of `server` with s3rver's fixed credentials. */
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
