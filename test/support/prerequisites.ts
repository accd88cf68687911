/**
 * The system tools the test suite shells out to (real S3 clients, Chromium, the Prometheus
 * Python client ...): what each is, its Debian package, how to find it fast, and the test options
 * that skip a test, saying why, where one is missing. One place for the global setup's table
 * (prerequisites.global-setup.ts), the run's closing line (prerequisites-reporter.ts), `npm
 * pretest`'s CI check (`node --import tsx test/support/prerequisites.ts`) and every test that
 * needs a tool (`describe(name, { ...needs('chromium') }, ...)`).
 *
 * Where it looks: Debian's /usr/bin first when it is on PATH (so a pip awscli 1.x or a pyenv
 * python3 earlier on PATH never replaces the client CI runs), then PATH in order; nothing off
 * PATH, so a PATH without the tools hides them (the check's own test relies on that).
 *
 * A developer's machine skips the tests whose tool is missing; with SHARDGATE_REQUIRE_ALL_TOOLS=1
 * (.ci/run sets it) a missing tool, or a SHARDGATE_SKIP_* switch, fails the run before any test.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

declare module 'vitest' {
  interface TaskMeta {
    /** Set on a test skipped for missing tools: tool id -> why (needs() sets it). */
    missingTools?: Record<string, string>;
  }
}

export type ToolId = 'awscli' | 'rclone' | 's3cmd' | 'restic' | 'duplicity' | 'curl' | 'boto3' | 'prometheus-client' | 'chromium' | 'gdb';

export interface Tool {
  id: ToolId;
  debianPackage: string;
  /** What the suite does with it (the table's last column). */
  usedFor: string;
  /** Found when this binary is on PATH ... */
  binary: string;
  /** ... and, for a Python module, when that python3 can import it. */
  pythonModule?: string;
  /** A diagnostic aid no test needs (its absence skips nothing), still required in CI. */
  optional?: boolean;
  /** The switch a developer sets to skip its tests on purpose. */
  skipVariable?: 'SHARDGATE_SKIP_CLI' | 'SHARDGATE_SKIP_BROWSER';
}

export const TOOLS: readonly Tool[] = [
  {
    id: 'awscli',
    debianPackage: 'awscli',
    binary: 'aws',
    skipVariable: 'SHARDGATE_SKIP_CLI',
    usedFor: 'CLI smoke tests (test/cli), the npm start banner, docs/DEPLOY.md run',
  },
  { id: 'rclone', debianPackage: 'rclone', binary: 'rclone', skipVariable: 'SHARDGATE_SKIP_CLI', usedFor: 'CLI smoke tests (test/cli), the npm start banner' },
  {
    id: 's3cmd',
    debianPackage: 's3cmd',
    binary: 's3cmd',
    skipVariable: 'SHARDGATE_SKIP_CLI',
    usedFor: "CLI smoke tests (test/cli), the README's client blocks",
  },
  {
    id: 'restic',
    debianPackage: 'restic',
    binary: 'restic',
    skipVariable: 'SHARDGATE_SKIP_CLI',
    usedFor: "the README's block for it (npm run test:full: test/dev/start.test.ts)",
  },
  {
    id: 'duplicity',
    debianPackage: 'duplicity',
    binary: 'duplicity',
    skipVariable: 'SHARDGATE_SKIP_CLI',
    usedFor: "the README's block for it (npm run test:full: test/dev/start.test.ts)",
  },
  { id: 'curl', debianPackage: 'curl', binary: 'curl', usedFor: 'docs/DEPLOY.md run (curl --aws-sigv4)' },
  {
    id: 'boto3',
    debianPackage: 'python3-boto3',
    binary: 'python3',
    pythonModule: 'boto3',
    usedFor: 'boto3 tests (listing, POST forms, SSE-C, Expect), the npm start banner',
  },
  {
    id: 'prometheus-client',
    debianPackage: 'python3-prometheus-client',
    binary: 'python3',
    pythonModule: 'prometheus_client',
    usedFor: "the official parser's cross-check of /_shardgate/metrics",
  },
  {
    id: 'chromium',
    debianPackage: 'chromium',
    binary: 'chromium',
    skipVariable: 'SHARDGATE_SKIP_BROWSER',
    usedFor: 'CORS, POST form, status page and cost chart tests in a browser',
  },
  {
    id: 'gdb',
    debianPackage: 'gdb',
    binary: 'gdb',
    optional: true,
    usedFor: "a wedged workerd's stack in the failure message of the suites sharing one gateway (test/cli, test/console; no test needs it)",
  },
];

export const REQUIRE_ALL_VARIABLE = 'SHARDGATE_REQUIRE_ALL_TOOLS';

export type ToolStatus = { state: 'found'; path: string } | { state: 'missing' } | { state: 'skipped'; variable: string };

export interface Prerequisites {
  status: Record<ToolId, ToolStatus>;
  /** True when SHARDGATE_REQUIRE_ALL_TOOLS=1: nothing may be skipped. */
  requireAll: boolean;
}

/** The binary named `name`: /usr/bin first when PATH has it, then PATH in order; undefined when absent. */
export function locateBinary(name: string, path = process.env.PATH ?? ''): string | undefined {
  const dirs = path.split(':').filter(Boolean);
  const ordered = dirs.includes('/usr/bin') ? ['/usr/bin', ...dirs.filter((d) => d !== '/usr/bin')] : dirs;
  for (const dir of ordered) {
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** Which of `modules` this python3 can import, asked once (find_spec locates, it does not import: ~30 ms). */
function importableModules(python: string, modules: string[]): Set<string> {
  const probe = 'import importlib.util, sys\nprint(" ".join(m for m in sys.argv[1:] if importlib.util.find_spec(m)))';
  const run = spawnSync(python, ['-c', probe, ...modules], { encoding: 'utf8', timeout: 10_000 });
  return new Set(run.status === 0 ? run.stdout.split(/\s+/).filter(Boolean) : []);
}

/** Looks for every tool (a few file checks and one python3 run) in the given environment. */
export function detectPrerequisites(env: NodeJS.ProcessEnv = process.env): Prerequisites {
  const python = locateBinary('python3', env.PATH ?? '');
  const modules = python
    ? importableModules(
        python,
        TOOLS.flatMap((t) => (t.pythonModule ? [t.pythonModule] : [])),
      )
    : new Set<string>();
  const status = {} as Record<ToolId, ToolStatus>;
  for (const tool of TOOLS) {
    const path = locateBinary(tool.binary, env.PATH ?? '');
    if (tool.skipVariable && env[tool.skipVariable] === '1') status[tool.id] = { state: 'skipped', variable: tool.skipVariable };
    else if (!path || (tool.pythonModule && !modules.has(tool.pythonModule))) status[tool.id] = { state: 'missing' };
    else status[tool.id] = { state: 'found', path };
  }
  return { status, requireAll: env[REQUIRE_ALL_VARIABLE] === '1' };
}

let detected: Prerequisites | undefined;

/** This process's prerequisites, detected once. */
export function prerequisites(): Prerequisites {
  return (detected ??= detectPrerequisites());
}

/** The path of a tool that is present (tests run it by this path). Throws when it is not: call it only in a test that needs() it. */
export function toolPath(id: ToolId): string {
  const s = prerequisites().status[id];
  if (s.state !== 'found') throw new Error(`${id} is not available: the test using it must declare needs('${id}')`);
  return s.path;
}

/** Why a test needing `id` cannot run here, or undefined when it can. */
function whyNot(tool: Tool, s: ToolStatus): string | undefined {
  if (s.state === 'found') return undefined;
  if (s.state === 'skipped') return `needs ${tool.id}: skipped on purpose (${s.variable}=1)`;
  return `needs ${tool.id}: missing (apt-get install ${tool.debianPackage})`;
}

/**
 * Test options for a describe or it that needs these tools: `skip` where one is unavailable,
 * with the reasons in the task's meta for the closing line (prerequisites-reporter.ts).
 */
export function needs(...ids: ToolId[]): SkipOptions {
  return skipOptions(prerequisites(), ids);
}

export interface SkipOptions {
  skip: boolean;
  meta: { missingTools?: Record<string, string> };
}

/** needs(), for the given prerequisites. */
export function skipOptions(p: Prerequisites, ids: ToolId[]): SkipOptions {
  const missing: Record<string, string> = {};
  for (const id of ids) {
    const reason = whyNot(TOOLS.find((t) => t.id === id)!, p.status[id]);
    if (reason) missing[id] = reason;
  }
  return Object.keys(missing).length ? { skip: true, meta: { missingTools: missing } } : { skip: false, meta: {} };
}

export function installLine(packages: string[]): string {
  return `apt-get install ${packages.join(' ')}`;
}

/** The short table printed before the tests run. */
export function prerequisitesTable(p: Prerequisites): string {
  const rows = TOOLS.map((t) => {
    const s = p.status[t.id];
    const state = s.state === 'found' ? s.path : s.state === 'skipped' ? `skipped (${s.variable}=1)` : t.optional ? 'missing (optional)' : 'MISSING';
    return [t.id, state, t.debianPackage, t.usedFor];
  });
  const widths = [0, 1, 2].map((i) => Math.max(...rows.map((r) => r[i]!.length)));
  const lines = rows.map((r) => `  ${r.map((c, i) => (i < 3 ? c.padEnd(widths[i]!) : c)).join('  ')}`.trimEnd());
  return [`system tools the tests use (test/support/prerequisites.ts):`, ...lines].join('\n');
}

/** What a CI run says and fails with when a tool is unavailable; undefined when it may go on. */
export function requireAllFailure(p: Prerequisites): string | undefined {
  if (!p.requireAll) return undefined;
  const missing = [...new Set(TOOLS.filter((t) => p.status[t.id].state === 'missing').map((t) => t.debianPackage))];
  const switches = [...new Set(TOOLS.map((t) => p.status[t.id]).flatMap((s) => (s.state === 'skipped' ? [s.variable] : [])))];
  const causes = [
    ...(missing.length ? [`${missing.length} Debian package(s) missing: ${installLine(missing)}`] : []),
    ...(switches.length ? [`${switches.map((v) => `${v}=1`).join(' and ')} set: unset it`] : []),
  ];
  return causes.length ? `${REQUIRE_ALL_VARIABLE}=1 and tests would be skipped: ${causes.join('; ')}` : undefined;
}

// `node --import tsx test/support/prerequisites.ts` (npm's pretest): in CI, fails in a second
// when a tool is unavailable, before tsc and vitest spend minutes; elsewhere says nothing (the
// global setup prints the table).
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const p = detectPrerequisites();
  const failure = requireAllFailure(p);
  if (failure) {
    console.error(`${prerequisitesTable(p)}\n\n${failure}`);
    process.exit(1);
  }
}
