/**
 * `npm run rehearse` as a person runs it (dev/rehearse.ts in its own process group, as a shell
 * starts it), once: with -c naming a copy of wrangler.production.toml outside the project, it
 * starts (this checkout's Worker, since that copy's `main` is not next to it) and prints the
 * encryption keys it made in the form `shardgate rescue` reads; Ctrl-C, which the terminal sends
 * to the whole group, stops it and removes everything it stored (every s3rver's data, the
 * Worker's state: nothing of it is left in its temporary directory).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../../dev/paths.ts';

describe('npm run rehearse', { timeout: 180_000 }, () => {
  const sandbox = mkdtempSync(join(tmpdir(), 'shardgate-rehearse-test-'));
  const temp = join(sandbox, 'tmp'); // the rehearsal's TMPDIR: everything it stores goes there
  const elsewhere = join(sandbox, 'ops-repo', 'wrangler.production.toml');
  let child: ChildProcess;
  let output = '';
  let exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  beforeAll(async () => {
    mkdirSync(temp);
    mkdirSync(join(sandbox, 'ops-repo'));
    copyFileSync(join(ROOT, 'wrangler.production.toml'), elsewhere);
    child = spawn(process.execPath, ['--import', 'tsx', 'dev/rehearse.ts', '-c', elsewhere, '--port', '0', '--cron-seconds', '0'], {
      cwd: ROOT,
      env: { ...process.env, TMPDIR: temp },
      detached: true, // its own process group, as a shell's job
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    exit = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
    for (let i = 0; i < 1500 && !output.includes('commands (type them here)'); i++) {
      if (child.exitCode !== null) throw new Error(`rehearse exited ${child.exitCode}:\n${output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    if (!output.includes('commands (type them here)')) throw new Error(`no banner after 150 s:\n${output}`);
  }, 170_000);

  afterAll(async () => {
    if (child?.exitCode === null && child.signalCode === null) {
      process.kill(-child.pid!, 'SIGKILL');
      await exit;
    }
    rmSync(sandbox, { recursive: true, force: true });
  });

  it("-c takes a config outside the project, run with this checkout's Worker", () => {
    expect(output).toContain(`shardgate rehearsal of ${elsewhere}: http://127.0.0.1:`);
    expect(output).toContain(
      `rehearsal: ${elsewhere} names main ${join(sandbox, 'ops-repo', 'worker/index.ts')}, which is not there: running this checkout's Worker (${join(ROOT, 'worker/index.ts')})`,
    );
  });

  it('prints the encryption keys it made, as SHARDGATE_KEYS for shardgate rescue and verify', () => {
    const line = /^export SHARDGATE_KEYS='(\{.*\})' /m.exec(output);
    expect(line, output).not.toBeNull();
    const keys = JSON.parse(line![1]!) as Record<string, string>;
    expect(Object.keys(keys)).toEqual(['k1']); // wrangler.production.toml's one key
    expect(Buffer.from(keys.k1!, 'base64')).toHaveLength(32);
  });

  it('Ctrl-C (SIGINT to its process group) stops it and removes everything it stored', async () => {
    // (tsx keeps its compile cache there too: not the rehearsal's.)
    const stored = () => readdirSync(temp).filter((name) => name.startsWith('shardgate-'));
    expect(stored().length, 'the rehearsal stores its backends and state there').toBeGreaterThanOrEqual(5);
    process.kill(-child.pid!, 'SIGINT');
    expect(await exit).toEqual({ code: 0, signal: null });
    expect(stored()).toEqual([]);
  });
});
