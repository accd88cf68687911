/**
 * `npm start` as a person runs it (dev/start.ts in its own process, state in a temp dir): PORT
 * picks the port, the banner names it, and the banner's copy-paste lines work as printed, run
 * by bash with Debian's awscli, boto3 and rclone (only their directories and /usr/bin:/bin on
 * PATH, a fresh HOME; that test needs() them); so do the README's blocks, one per client (AWS SDK,
 * boto3, awscli, rclone, s3cmd; restic and duplicity too in `npm run test:full`), on the same gateway. Last, a config that
 * retires a backend still holding shards is refused at start (issue 26).
 */
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { devConfigSource as readDevConfigSource } from '../../dev/dev-config.ts';
import { ROOT } from '../../dev/paths.ts';
import { needs, toolPath } from '../support/prerequisites.ts';

/**
 * The README's blocks ("Your client against `npm start`") this run pastes, and the clients they
 * need (the SDK's is the repo's own). restic's and duplicity's take 5-7 s each to start and run,
 * more than the rest together: they run in `npm run test:full` (SHARDGATE_FULL_SIZE=1), once in
 * CI, not in every `npm test`.
 */
const FULL = process.env.SHARDGATE_FULL_SIZE === '1';
const README_CLIENTS = ['AWS SDK for JavaScript v3', 'boto3', 'awscli', 'rclone', 's3cmd', ...(FULL ? ['restic', 'duplicity'] : [])];
const README_TOOLS = ['boto3', 'awscli', 'rclone', 's3cmd', ...(FULL ? (['restic', 'duplicity'] as const) : [])] as const;

/** Each `**Client**` heading of the README's client section with the sh block under it. */
function readmeClientBlocks(readme: string): { client: string; script: string }[] {
  const start = readme.indexOf('## Your client against `npm start`');
  const section = readme.slice(start, readme.indexOf('\n## ', start + 1));
  return [...section.matchAll(/^\*\*([^*]+)\*\*.*\n\n```sh\n([\s\S]*?)```/gm)].map((m) => ({ client: m[1]!, script: m[2]! }));
}

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

describe('npm start', { timeout: 180_000 }, () => {
  let child: ChildProcess | undefined;
  let output = '';
  let port: number;
  let state: string;

  beforeAll(async () => {
    state = mkdtempSync(join(tmpdir(), 'shardgate-start-'));
    port = await freePort();
    child = spawn(process.execPath, ['--import', 'tsx', 'dev/start.ts', '--persist-to', join(state, 'wrangler'), '--no-watch', '--cron-seconds', '0'], {
      cwd: ROOT,
      env: { ...process.env, PORT: String(port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
    for (let i = 0; i < 1200 && !output.includes('rclone ls shardgate:'); i++) {
      if (child.exitCode !== null) throw new Error(`npm start exited ${child.exitCode}:\n${output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    if (!output.includes('rclone ls shardgate:')) throw new Error(`no banner after 120 s:\n${output}`);
  }, 150_000);

  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child!.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    if (state) rmSync(state, { recursive: true, force: true });
  }, 60_000);

  it('serves on PORT and the banner says so', async () => {
    expect(output).toContain(`shardgate local gateway: http://127.0.0.1:${port} `);
    expect((await fetch(`http://127.0.0.1:${port}/_shardgate/status`)).status).toBe(200);
    expect((await fetch(`http://localhost:${port}/_shardgate/status`)).status).toBe(200);
    // The web console, through the local front as a browser reaches it.
    expect(output).toContain(`web console: http://127.0.0.1:${port}/_shardgate/console `);
    const page = await fetch(`http://127.0.0.1:${port}/_shardgate/console`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    const script = /src="([^"]+\.js)"/.exec(await page.text())![1]!;
    expect((await fetch(`http://127.0.0.1:${port}${script}`)).headers.get('content-type')).toBe('text/javascript; charset=utf-8');
  });

  it("the banner's copy-paste lines work as printed (awscli, boto3, rclone)", needs('awscli', 'boto3', 'rclone'), async () => {
    const banner = output.slice(output.indexOf('shardgate local gateway:'));
    const lines = banner.split('\n').filter((l) => /^(export |aws |python3 |rclone )/.test(l));
    expect(lines.length).toBeGreaterThanOrEqual(6);
    const home = mkdtempSync(join(tmpdir(), 'shardgate-start-home-'));
    try {
      const { stdout } = await promisify(execFile)('/bin/bash', ['-euc', lines.join('\n')], {
        cwd: ROOT,
        env: {
          PATH: [...new Set([...(['awscli', 'boto3', 'rclone'] as const).map((t) => dirname(toolPath(t))), '/usr/bin', '/bin'])].join(':'),
          HOME: home,
          LANG: 'C.UTF-8',
        },
        timeout: 120_000,
      });
      expect(stdout).toMatch(/make_bucket: demo/);
      expect(stdout).toMatch(/upload: \.\/README\.md to s3:\/\/demo\/README\.md/);
      expect(stdout).toMatch(/^1$/m); // boto3: KeyCount
      expect(stdout).toMatch(/^\s*\d+ README\.md$/m); // rclone ls
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it(
    `the README's client blocks work as printed, one per client, on this gateway (${FULL ? 'all seven' : 'restic and duplicity: npm run test:full'})`,
    needs(...README_TOOLS),
    async () => {
      const all = readmeClientBlocks(readFileSync(join(ROOT, 'README.md'), 'utf8'));
      expect(all.map((b) => b.client)).toEqual(['AWS SDK for JavaScript v3', 'boto3', 'awscli', 'rclone', 's3cmd', 'restic', 'duplicity']);
      const blocks = all.filter((b) => README_CLIENTS.includes(b.client));
      const home = mkdtempSync(join(tmpdir(), 'shardgate-readme-home-'));
      const started = Date.now();
      try {
        // Each block uses buckets of its own, so they run side by side, each as a person pastes it:
        // bash in the clone, a fresh HOME, only the clients' directories and /usr/bin:/bin on PATH.
        const PATH = [...new Set([dirname(process.execPath), ...README_TOOLS.map((t) => dirname(toolPath(t))), '/usr/bin', '/bin'])].join(':');
        const runs = await Promise.all(
          blocks.map(async (b) => {
            const blockHome = join(home, b.client.replace(/\W+/g, '-'));
            mkdirSync(blockHome);
            const script = b.script.replaceAll('127.0.0.1:8787', `127.0.0.1:${port}`);
            try {
              const { stdout } = await promisify(execFile)('/bin/bash', ['-euo', 'pipefail', '-c', script], {
                cwd: ROOT,
                env: { PATH, HOME: blockHome, LANG: 'C.UTF-8' },
                timeout: 120_000,
              });
              return { client: b.client, stdout, error: null };
            } catch (err) {
              return { client: b.client, stdout: '', error: String((err as { stderr?: string }).stderr || err) };
            }
          }),
        );
        expect(runs.filter((r) => r.error)).toEqual([]);
        const out = Object.fromEntries(runs.map((r) => [r.client, r.stdout]));
        expect(out['AWS SDK for JavaScript v3']).toContain('hello from the SDK');
        expect(out.boto3).toContain('hello from boto3');
        expect(out.awscli).toMatch(/upload: \.\/README\.md to s3:\/\/demo\/README\.md/);
        expect(out.rclone).toMatch(/^\s*\d+ docs\/README\.md$/m);
        expect(out.s3cmd).toMatch(/s3:\/\/demo-s3cmd\/README\.md/);
        if (FULL) {
          expect(out.restic).toMatch(/1 snapshots/);
          expect(out.duplicity).toMatch(/Number of contained backup sets: 1/);
        }
        console.log(`README client blocks: ${blocks.length} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
      } finally {
        rmSync(home, { recursive: true, force: true });
      }
    },
  );

  it('a config retiring a backend that still holds shards is refused at start, naming the count (issue 26)', async () => {
    // A coded object of its own (4+2 over six backends: a shard on each), whether or not the
    // banner's lines (which need awscli, boto3 and rclone) stored theirs.
    const s3 = new S3Client({
      endpoint: `http://127.0.0.1:${port}`,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: 'shardgate-dev', secretAccessKey: 'shardgate-dev-secret' },
      maxAttempts: 1,
    });
    await s3.send(new CreateBucketCommand({ Bucket: 'retire-proof' }));
    await s3.send(new PutObjectCommand({ Bucket: 'retire-proof', Key: 'coded', Body: new Uint8Array(100_000).fill(7) }));
    s3.destroy();
    const exited = new Promise((r) => child!.once('exit', r));
    child!.kill('SIGTERM');
    await exited;
    const config = JSON.parse(String(readDevConfigSource()));
    config.backends[5].state = 'retired';
    config.policies = { 'replicate-3': config.policies['replicate-3'] };
    delete config.storageClasses; // they name the policies dropped here
    config.defaultPolicy = 'replicate-3';
    // Started again on the same state with the retiring config: the refusal is made at start.
    const again = spawn(process.execPath, ['--import', 'tsx', 'dev/start.ts', '--persist-to', join(state, 'wrangler'), '--no-watch', '--cron-seconds', '0'], {
      cwd: ROOT,
      env: { ...process.env, PORT: String(port), SHARDGATE_CONFIG: JSON.stringify(config) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let said = '';
    again.stdout!.on('data', (c: Buffer) => (said += c.toString()));
    again.stderr!.on('data', (c: Buffer) => (said += c.toString()));
    const code = await new Promise<number | null>((r) => again.once('exit', r));
    expect(code, said).toBe(1);
    expect(said).toMatch(/backend local-5 is marked "retired", but the running gateway's catalog records [1-9]\d* shard file\(s\)/);
    expect(said).not.toContain('rclone ls shardgate:');
  });
});
