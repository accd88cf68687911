/**
 * docs/DEPLOY.md, run: every shell block marked `<!-- run by test/deploy/rehearsal.test.ts ... -->`
 * is executed as written, with bash, Debian's awscli and curl, in a clean environment:
 * - the cost comparison (step 2), in the repository (where `npx shardgate` resolves);
 * - the verification (step 10) and the admin cost report against `npm run rehearse`'s gateway
 *   (dev/rehearsal.ts: wrangler.production.toml run as DEPLOYED over s3rver backends), with the
 *   endpoint and key the rehearsal prints;
 * and the other half of "safe by default": wrangler.toml's development config run as deployed
 * (workerd, no local-development signal) refuses awscli signing with the development key.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRehearsal, type Rehearsal } from '../../dev/rehearsal.ts';
import { cleanEnv } from '../cli/tools.ts';
import { needs } from '../support/prerequisites.ts';
import { projectWranglerToml, ROOT, runWorker, type RunningWorker } from '../support/worker.ts';

const run = promisify(execFile);
const DEPLOY_MD = readFileSync(join(ROOT, 'docs/DEPLOY.md'), 'utf8');

/** The shell blocks that follow a `<!-- run by test/deploy/rehearsal.test.ts ... -->` marker, in order. */
function markedBlocks(): { marker: string; script: string }[] {
  return [...DEPLOY_MD.matchAll(/<!-- (run by test\/deploy\/rehearsal\.test\.ts[^>]*) -->\n```sh\n([\s\S]*?)```/g)].map((m) => ({
    marker: m[1]!,
    script: m[2]!,
  }));
}

async function bash(script: string, env: NodeJS.ProcessEnv, cwd: string): Promise<{ stdout: string; stderr: string }> {
  try {
    return await run('bash', ['-eo', 'pipefail', '-c', script], { env, cwd, timeout: 300_000, maxBuffer: 64 * 1024 * 1024 });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; code?: number };
    throw new Error(`block failed (exit ${e.code}):\n${script}\n--- stdout ---\n${e.stdout}\n--- stderr ---\n${e.stderr}`);
  }
}

/** Debian's awscli (/usr/bin) first, as the CLI smoke tests run it; nothing inherited but PATH. */
function clientEnv(home: string, extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = cleanEnv(home, {
    AWS_CONFIG_FILE: join(home, 'aws-config'),
    AWS_SHARED_CREDENTIALS_FILE: join(home, 'aws-credentials'),
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_PAGER: '',
    ...extra,
  });
  return { ...env, PATH: `/usr/bin:${env.PATH}` };
}

describe('docs/DEPLOY.md, run', () => {
  const blocks = markedBlocks();
  const home = mkdtempSync(join(tmpdir(), 'shardgate-deploy-md-'));
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  it('marks the cost comparison, the verification and the cost report', () => {
    expect(blocks.map((b) => b.marker)).toEqual([
      'run by test/deploy/rehearsal.test.ts',
      'run by test/deploy/rehearsal.test.ts against npm run rehearse',
      'run by test/deploy/rehearsal.test.ts against npm run rehearse',
    ]);
  });

  it('step 2: npx shardgate cost prints the comparison and writes the chart', async () => {
    const svg = join(ROOT, 'cost.svg');
    try {
      const { stdout } = await bash(blocks[0]!.script, { ...process.env }, ROOT);
      expect(stdout).toMatch(/^4\+2 +1\/1\/1\/1\/1\/1 +1500 /m);
      expect(stdout).toMatch(/^10\+4 +3\/3\/2\/2\/2\/2 /m);
      expect(readFileSync(svg, 'utf8')).toContain('</svg>');
    } finally {
      rmSync(svg, { force: true });
    }
  });

  describe('against npm run rehearse (the production config, deployed, over s3rver)', needs('curl'), () => {
    let r: Rehearsal;
    let env: NodeJS.ProcessEnv;
    beforeAll(async () => {
      r = await startRehearsal({ port: 0, log: () => {} });
      const key = r.credentials[0]!;
      const admin = r.credentials.find((c) => c.accessKeyId === 'example-admin')!;
      env = clientEnv(home, {
        ENDPOINT: `http://127.0.0.1:${r.gateway.port}`,
        AWS_ACCESS_KEY_ID: key.accessKeyId,
        AWS_SECRET_ACCESS_KEY: key.secretAccessKey,
        AWS_DEFAULT_REGION: r.region,
        ADMIN_KEY_ID: admin.accessKeyId,
        ADMIN_SECRET: admin.secretAccessKey,
      });
    });
    afterAll(() => r?.close());

    it('step 10: the verification block passes, as written', needs('awscli'), async () => {
      const { stdout, stderr } = await bash(blocks[1]!.script, env, home);
      // It wrote no awscli setting where the user's own profile is (here: the environment's
      // AWS_CONFIG_FILE), nor left its test files behind.
      expect(existsSync(env.AWS_CONFIG_FILE!)).toBe(false);
      expect(existsSync(env.AWS_SHARED_CREDENTIALS_FILE!)).toBe(false);
      expect(existsSync(join(home, 'big.bin'))).toBe(false);
      const status = JSON.parse(stdout.split('\n')[0]!);
      expect(status.deployment.mode).toBe('deployed');
      expect(status.backends.map((b: { domain: string }) => b.domain)).toEqual([
        'cloudflare/r2-weur',
        'cloudflare/r2-enam',
        'aws/eu-central-1',
        'backblaze/eu-central-003',
        'wasabi/eu-central-1',
        'gcp/europe-west4',
      ]);
      expect(status.deployment.warnings.every((w: string) => /talks to http:\/\/127\.0\.0\.1:\d+ without TLS/.test(w))).toBe(true);
      expect(stdout).toMatch(/^make_bucket: verify-\d+$/m);
      expect(stdout).toMatch(/^\S+ \S+ +70000000 big\.bin$/m);
      expect(stdout).toMatch(/^"[0-9a-f]{32}-2"$/m); // multipart: a 64 MiB part and the rest
      expect(stdout).toContain('big.bin: same bytes back');
      expect(stdout).toMatch(/^remove_bucket: verify-\d+$/m);
      expect(stderr).toContain('InvalidAccessKeyId');
      expect(stdout).toContain('the development key is refused');
    });

    it('step 10: the admin cost report answers, per backend at the preset prices', async () => {
      const { stdout } = await bash(blocks[2]!.script, env, home);
      const report = JSON.parse(stdout);
      expect(report.backends.map((b: { id: string; prices: { source: string } }) => `${b.id}: ${b.prices.source}`)).toEqual([
        'r2-weur: preset cloudflare-r2 (default for kind r2)',
        'r2-enam: preset cloudflare-r2 (default for kind r2)',
        'aws-fra: preset aws-s3-standard with overrides',
        'b2-ams: preset backblaze-b2',
        'wasabi-ams: preset wasabi',
        'gcs-eu: preset gcs-standard',
      ]);
      // The verification's writes and reads went through this isolate's meter.
      expect(report.backends.reduce((s: number, b: { usage: { putRequests: number } }) => s + b.usage.putRequests, 0)).toBeGreaterThan(0);
      expect(report.total.total).toBeGreaterThan(0);
    });
  });

  describe("wrangler.toml's development config, deployed as it is", needs('awscli'), () => {
    let worker: RunningWorker;
    beforeAll(async () => {
      // The project's wrangler.toml and bindings, and no SHARDGATE_LOCAL_DEV: what `wrangler deploy` would run.
      worker = await runWorker(join(ROOT, 'worker/index.ts'), { wranglerToml: projectWranglerToml(), prefix: 'shardgate-deployed-' });
    });
    afterAll(() => worker?.dispose());

    it('refuses awscli signing with the development key, saying why', async () => {
      const env = clientEnv(home, { AWS_ACCESS_KEY_ID: 'shardgate-dev', AWS_SECRET_ACCESS_KEY: 'shardgate-dev-secret', AWS_DEFAULT_REGION: 'us-east-1' });
      const failed = await run('aws', ['--endpoint-url', worker.url.origin, 's3', 'ls'], { env, cwd: home }).then(
        () => null,
        (e: { stderr: string }) => e,
      );
      expect(failed, 'aws s3 ls must fail').not.toBeNull();
      expect(failed!.stderr).toContain(
        'An error occurred (AccessDenied) when calling the ListBuckets operation: shardgate refuses every request: its configuration is not fit for a deployed worker (11 problems',
      );
      const status = await (await fetch(new URL('/_shardgate/status', worker.url))).json();
      expect(status).toMatchObject({ refused: true, problems: 11 });
    });
  });
});
