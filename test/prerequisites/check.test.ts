/**
 * The prerequisite check (test/support/prerequisites.ts, issue 49): what it finds on a PATH of the
 * test's choosing, and, in vitests of their own over test/prerequisites/fixture, what a run does
 * on a machine with only Node (the tools' directories off PATH, a python3 without its modules):
 * the table says what is missing, exactly the tests that need a missing tool are skipped with the
 * reason, and the run ends green with the count and the apt-get line; with
 * SHARDGATE_REQUIRE_ALL_TOOLS=1 (CI) the run and `npm test`'s pretest step fail in seconds naming
 * the packages. Where every tool is installed (CI), the same run skips nothing.
 */
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { summaryLines } from '../support/prerequisites-reporter.ts';
import { detectPrerequisites, locateBinary, needs, prerequisitesTable, requireAllFailure, skipOptions, TOOLS } from '../support/prerequisites.ts';
import { ROOT } from '../support/worker.ts';

const sandbox = mkdtempSync(join(tmpdir(), 'shardgate-prerequisites-'));
afterAll(() => rmSync(sandbox, { recursive: true, force: true }));

/** Writes executable shell scripts `name` -> body into `dir`. */
function addScripts(dir: string, scripts: Record<string, string>): string {
  for (const [file, body] of Object.entries(scripts)) {
    writeFileSync(join(dir, file), `#!/bin/sh\n${body}\n`);
    chmodSync(join(dir, file), 0o755);
  }
  return dir;
}

/** A machine with only Node: no client on PATH, and a python3 that finds none of its modules (-S: no site or dist-packages). */
const BARE_PATH = addScripts(mkdtempSync(join(sandbox, 'bare-')), { python3: 'exec /usr/bin/python3 -S "$@"' });

interface Run {
  code: number | null;
  output: string;
  ms: number;
}

/** A command in a clean environment (HOME, PATH and `env` only), its output and how long it took. */
function run(args: string[], env: Record<string, string>): Promise<Run> {
  const started = Date.now();
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      args,
      { cwd: ROOT, env: { HOME: sandbox, LANG: 'C.UTF-8', ...env }, timeout: 120_000, maxBuffer: 16 << 20 },
      (err, stdout, stderr) => {
        const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : null) : 0;
        resolve({ code, output: stdout + stderr, ms: Date.now() - started });
      },
    );
  });
}

/** vitest over the fixture folder alone, as `npm test` runs vitest (this repository's config). */
const fixtureRun = (env: Record<string, string>) =>
  run([join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', '--project', 'node', 'test/prerequisites/fixture'], {
    SHARDGATE_PREREQUISITES_FIXTURE: '1',
    NO_COLOR: '1',
    // Its time table goes to the sandbox: by default it would replace the outer run's
    // .vitest-times.json, which then holds this one file until the outer run ends.
    SHARDGATE_TEST_TIMES_OUT: join(sandbox, 'vitest-times.json'),
    ...env,
  });

describe('detecting the tools', () => {
  it('on a PATH without them (and a python3 without boto3 and prometheus_client) reports each missing', () => {
    const p = detectPrerequisites({ PATH: BARE_PATH });
    expect(Object.values(p.status).map((s) => s.state)).toEqual(TOOLS.map(() => 'missing'));
    const table = prerequisitesTable(p);
    for (const tool of TOOLS) expect(table).toMatch(new RegExp(`^  ${tool.id} +(MISSING|missing \\(optional\\)) +${tool.debianPackage} `, 'm'));
  });

  it('finds each where it is: a binary on PATH, a module its python3 can import', () => {
    const dir = addScripts(mkdtempSync(join(sandbox, 'some-')), {
      aws: 'exit 0',
      chromium: 'exit 0',
      // The probe prints the modules it found, among those asked for.
      python3: 'echo boto3',
    });
    const p = detectPrerequisites({ PATH: `${dir}:${BARE_PATH}` });
    expect(p.status.awscli).toEqual({ state: 'found', path: join(dir, 'aws') });
    expect(p.status.chromium).toEqual({ state: 'found', path: join(dir, 'chromium') });
    expect(p.status.boto3).toEqual({ state: 'found', path: join(dir, 'python3') });
    expect(p.status['prometheus-client']).toEqual({ state: 'missing' });
    expect(p.status.rclone).toEqual({ state: 'missing' });
  });

  it("prefers Debian's /usr/bin when PATH has it, and looks nowhere off PATH", () => {
    const dir = addScripts(mkdtempSync(join(sandbox, 'shadow-')), { env: 'exit 0' });
    expect(locateBinary('env', `${dir}:/usr/bin`)).toBe('/usr/bin/env');
    expect(locateBinary('env', dir)).toBe(join(dir, 'env'));
    expect(locateBinary('env', BARE_PATH)).toBeUndefined();
  });

  it('takes well under a second', () => {
    const started = performance.now();
    detectPrerequisites({ PATH: process.env.PATH });
    expect(performance.now() - started).toBeLessThan(1000);
  });
});

describe('what a test that needs a tool gets', () => {
  const bare = () => detectPrerequisites({ PATH: BARE_PATH });

  it('skipped, with a reason naming the tool and its package', () => {
    expect(skipOptions(bare(), ['awscli', 'chromium'])).toEqual({
      skip: true,
      meta: { missingTools: { awscli: 'needs awscli: missing (apt-get install awscli)', chromium: 'needs chromium: missing (apt-get install chromium)' } },
    });
  });

  it('run where the tool is found', () => {
    const found = bare();
    found.status.awscli = { state: 'found', path: '/usr/bin/aws' };
    expect(skipOptions(found, ['awscli'])).toEqual({ skip: false, meta: {} });
    expect(needs()).toEqual({ skip: false, meta: {} });
  });

  it('skipped on purpose under SHARDGATE_SKIP_CLI / SHARDGATE_SKIP_BROWSER, which CI refuses', () => {
    const p = detectPrerequisites({ PATH: process.env.PATH, SHARDGATE_SKIP_BROWSER: '1' });
    expect(skipOptions(p, ['chromium']).meta.missingTools).toEqual({ chromium: 'needs chromium: skipped on purpose (SHARDGATE_SKIP_BROWSER=1)' });
    const ci = detectPrerequisites({ PATH: process.env.PATH, SHARDGATE_SKIP_BROWSER: '1', SHARDGATE_REQUIRE_ALL_TOOLS: '1' });
    expect(requireAllFailure(ci)).toMatch(/^SHARDGATE_REQUIRE_ALL_TOOLS=1 and tests would be skipped: (.*; )?SHARDGATE_SKIP_BROWSER=1 set: unset it$/);
    const bare = detectPrerequisites({ PATH: BARE_PATH, SHARDGATE_REQUIRE_ALL_TOOLS: '1' });
    expect(requireAllFailure(bare)).toBe(
      'SHARDGATE_REQUIRE_ALL_TOOLS=1 and tests would be skipped: 10 Debian package(s) missing: apt-get install awscli rclone s3cmd restic duplicity curl python3-boto3 python3-prometheus-client chromium gdb',
    );
    expect(requireAllFailure(detectPrerequisites({ PATH: BARE_PATH }))).toBeUndefined(); // a developer's machine goes on
  });

  it('the closing lines: per tool its reason and files, then the count and one apt-get line', () => {
    const byTool = new Map([
      ['chromium', { reason: 'needs chromium: missing (apt-get install chromium)', files: new Set(['test/b.test.ts', 'test/a.test.ts']) }],
      ['awscli', { reason: 'needs awscli: missing (apt-get install awscli)', files: new Set(['test/a.test.ts']) }],
    ]);
    expect(summaryLines({ tests: 5, byTool })).toEqual([
      '  needs awscli: missing (apt-get install awscli): test/a.test.ts',
      '  needs chromium: missing (apt-get install chromium): test/a.test.ts, test/b.test.ts',
      '5 test(s) skipped for want of system tools; to run them: apt-get install awscli chromium',
    ]);
    expect(summaryLines({ tests: 0, byTool: new Map() })).toEqual([]);
  });
});

describe('a vitest run on a machine with only Node', { timeout: 120_000 }, () => {
  it('prints the table, skips exactly the tests needing a missing tool (saying which), passes the rest, and ends with the count and the apt-get line', async () => {
    const r = await fixtureRun({ PATH: BARE_PATH });
    expect(r.code, r.output).toBe(0);
    expect(r.output).toMatch(/^system tools the tests use \(test\/support\/prerequisites\.ts\):$/m);
    expect(r.output).toMatch(/^ {2}awscli +MISSING +awscli /m);
    expect(r.output).toMatch(/Tests +1 passed \| 3 skipped \(4\)/);
    expect(r.output).toContain('  needs awscli: missing (apt-get install awscli): test/prerequisites/fixture/needs-tools.test.ts');
    expect(r.output).toContain('  needs chromium: missing (apt-get install chromium): test/prerequisites/fixture/needs-tools.test.ts');
    const lines = r.output.trimEnd().split('\n');
    expect(lines.at(-1)).toBe(
      '3 test(s) skipped for want of system tools; to run them: apt-get install awscli python3-boto3 python3-prometheus-client chromium',
    );
  });

  it('with SHARDGATE_REQUIRE_ALL_TOOLS=1 (CI) fails before any test, within 10 s, naming the packages', async () => {
    const r = await fixtureRun({ PATH: BARE_PATH, SHARDGATE_REQUIRE_ALL_TOOLS: '1' });
    expect(r.code, r.output).not.toBe(0);
    expect(r.ms).toBeLessThan(10_000);
    expect(r.output).toContain('apt-get install awscli rclone s3cmd restic duplicity curl python3-boto3 python3-prometheus-client chromium gdb');
    expect(r.output).not.toMatch(/Tests +\d+ passed/);
  });

  it("npm test's pretest step fails in CI within 10 s naming the packages, and says nothing elsewhere", async () => {
    const check = ['--import', 'tsx', 'test/support/prerequisites.ts'];
    const ci = await run(check, { PATH: BARE_PATH, SHARDGATE_REQUIRE_ALL_TOOLS: '1' });
    expect(ci.code).toBe(1);
    expect(ci.ms).toBeLessThan(10_000);
    expect(ci.output).toContain('apt-get install awscli rclone s3cmd restic duplicity curl python3-boto3 python3-prometheus-client chromium gdb');
    const developer = await run(check, { PATH: BARE_PATH });
    expect(developer).toMatchObject({ code: 0, output: '' });
  });
});

describe('a vitest run where every tool is installed', { timeout: 120_000, ...needs('awscli', 'boto3', 'prometheus-client', 'chromium') }, () => {
  it('skips nothing and prints no skip line', async () => {
    const r = await fixtureRun({ PATH: process.env.PATH ?? '' });
    expect(r.code, r.output).toBe(0);
    expect(r.output).toMatch(/Tests +4 passed \(4\)/);
    expect(r.output).not.toContain('skipped for want of system tools');
  });
});
