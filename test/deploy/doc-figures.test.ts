/**
 * The figures docs/DEPLOY.md gives a person about to deploy, checked against what they measure:
 * the bundle's gzipped size as `wrangler deploy --dry-run` reports it for wrangler.production.toml
 * (step 5's `npm run check:deploy`), and how long `npm test` takes, which must be the README's
 * figure (measured as docs/TESTING.md says; the README gives it beside `npm test`).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../support/worker.ts';

const DEPLOY_MD = readFileSync(join(ROOT, 'docs/DEPLOY.md'), 'utf8');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

describe("docs/DEPLOY.md's figures", { timeout: 120_000 }, () => {
  const out = mkdtempSync(join(tmpdir(), 'shardgate-dry-run-'));
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  it("the bundle size is the dry run's, within 10%", async () => {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      [join(ROOT, 'node_modules/wrangler/bin/wrangler.js'), 'deploy', '--dry-run', '-c', 'wrangler.production.toml', '--outdir', out],
      {
        cwd: ROOT,
        timeout: 110_000,
        maxBuffer: 16 << 20,
        env: { ...process.env, WRANGLER_SEND_METRICS: 'false' },
      },
    );
    const measured = Number(/Total Upload: [\d.]+ KiB \/ gzip: ([\d.]+) KiB/.exec(stdout + stderr)?.[1]);
    expect(measured, stdout + stderr).toBeGreaterThan(0);
    const documented = Number(/the bundle, about (\d+) KiB gzipped/.exec(DEPLOY_MD)?.[1]);
    expect(Math.abs(documented - measured) / measured, `documented ${documented} KiB, measured ${measured} KiB`).toBeLessThan(0.1);
  });

  it("the test suite's duration is the README's", () => {
    const readme = /The whole suite takes about (\d+)\s+minutes on two cores/.exec(README)?.[1];
    const deploy = /npm test +# run here: the whole suite, about (\d+) minutes on 2 cores/.exec(DEPLOY_MD)?.[1];
    expect(readme).toBeDefined();
    expect(deploy).toBe(readme);
  });
});
