/**
 * What the docs name must exist (issue 46): every npm script (`npm run X`, `npm start`, `npm
 * test`), every `shardgate` command (`npx shardgate X`, `` `shardgate X` ``; cli/commands/), every
 * config key (the keys of the JSON config fragments, dotted paths such as
 * `codingBudget.tenantShare`) and every source file (a path with a folder: `engine/placement.ts`,
 * from the root, worker/, docs/ or the doc's own folder) named in the README, CONTRIBUTING,
 * SECURITY, BENCHMARKS and docs/. And docs/CONFIG.md is what `npm run docs:config` generates from
 * the zod schema now (dev/config-reference.ts), so a key added, removed or given a new default
 * without regenerating fails here. Reads files only: no gateway, no client (one file: its import
 * of the TypeScript parser and the schema is most of its time).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONFIG_MD, render, rows } from '../../dev/config-reference.ts';
import { ROOT } from '../support/worker.ts';

const DOCS = [
  'README.md',
  'CONTRIBUTING.md',
  'SECURITY.md',
  'BENCHMARKS.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];
const text = (file: string) => readFileSync(join(ROOT, file), 'utf8');

/** npm's own commands that a doc may name after `npm`. */
const NPM_BUILTINS = new Set(['install', 'ci', 'view', 'run', 'exec']);
const scripts = new Set(Object.keys(JSON.parse(text('package.json')).scripts as Record<string, string>));
const commands = new Set(
  readdirSync(join(ROOT, 'cli/commands')).flatMap((f) =>
    [...text(`cli/commands/${f}`).matchAll(/^(?:\s*name: |export const name = )'([a-z-]+)'/gm)].map((m) => m[1]!),
  ),
);
/** `shardgate X` phrases that are not commands: the data key's AAD, `shardgate dek v1 <kid>` (docs/FORMAT.md). */
const NOT_COMMANDS = new Set(['dek']);
/** Dotted names in the docs that are fields of the status document, not config paths, though their first part is a config key. */
const STATUS_FIELDS = new Set(['scrub.units', 's3.recent']);

/** Every key path of the schema (`policies.<name>.k`), and every key name. */
const paths = rows().map((r) => r.path.replace(/\[\]/g, ''));
const names = new Set(paths.map((p) => p.split('.').at(-1)!));
const topLevel = new Set(paths.filter((p) => !p.includes('.')));
/** Objects whose keys are the operator's names (a policy's, a bucket's, a storage class's), not the schema's. */
const RECORDS = new Set(['policies', 'buckets', 'storageClasses', 'sources']);

/**
 * Paths the docs name that are not files of this repository: other projects' (ceph/s3-tests,
 * xxHash), placeholders, files a command writes, and BENCHMARKS.md's history (findings name the
 * file as it was then; each says where the fix landed).
 */
const NOT_OUR_FILES = [
  /^s3tests\//,
  /^doc\/xxhash_spec\.md$/,
  /^bench\/results\/(A|B|NAME)\.json$/,
  /^BUCKET\//,
  /^\.\/keys\.json$/,
  /^worker\/auth\/large-pieces\.ts$/,
  /^bench\/fixtures\/pull-body\.ts$/,
  /^worker\/ec\/unit-reader\.ts$/,
];
const PATH = /(?<![\w./-])((?:\.\.\/)?[A-Za-z0-9_.-]+(?:\/[A-Za-z0-9_.-]+)+\.(?:ts|mjs|cjs|js|json|sh|toml|py|md|rs|txt))(?![\w/])/g;

/** `line:problem` for each name in `file` that does not exist. */
function problems(file: string, body: string): string[] {
  const out: string[] = [];
  const at = (index: number) => body.slice(0, index).split('\n').length;
  for (const m of body.matchAll(PATH)) {
    const path = m[1]!;
    if (NOT_OUR_FILES.some((r) => r.test(path))) continue;
    const places = [path, `worker/${path}`, `docs/${path}`, `test/${path}`, `coder-wasm/${path}`, normalize(join(dirname(file), path))];
    if (!places.some((p) => existsSync(join(ROOT, p)))) out.push(`${file}:${at(m.index!)}: file "${path}" does not exist`);
  }
  for (const m of body.matchAll(/\bnpm (?:run(?: --silent)? )?([a-z][\w:.-]*)/g)) {
    const name = m[1]!;
    const isRun = m[0].includes(' run ');
    if (!isRun && NPM_BUILTINS.has(name)) continue;
    if (!isRun && !['start', 'test'].includes(name)) continue; // `npm warn`, prose
    if (!scripts.has(name)) out.push(`${file}:${at(m.index!)}: npm script "${name}" is not in package.json`);
  }
  for (const m of body.matchAll(/(?:npx shardgate|`shardgate|npm run shardgate --) ([a-z][a-z-]*)/g)) {
    if (!commands.has(m[1]!) && !NOT_COMMANDS.has(m[1]!)) out.push(`${file}:${at(m.index!)}: shardgate command "${m[1]}" is not in cli/commands/`);
  }
  for (const m of body.matchAll(/```jsonc?\n([\s\S]*?)```/g)) {
    for (const key of jsonKeys(m[1]!)) {
      if (!key.record && !names.has(key.name)) out.push(`${file}:${at(m.index!) + key.line}: config key "${key.name}" is not in the schema`);
    }
  }
  for (const m of body.matchAll(/`([a-z][A-Za-z0-9]*(?:\.[a-zA-Z][A-Za-z0-9]*)+)`/g)) {
    const path = m[1]!;
    const first = path.split('.')[0]!;
    if (!topLevel.has(first) || STATUS_FIELDS.has(path) || /\.(ts|md|json|toml|js|mjs|com|net|org)$/.test(path)) continue; // files, host names
    const generic = path.replace(/^(policies|buckets|sources)\.[^.]+/, '$1.<name>');
    if (!paths.includes(generic)) out.push(`${file}:${at(m.index!)}: config path "${path}" is not in the schema`);
  }
  return out;
}

/** The keys of a JSON(C) fragment, each with whether it names an entry of a record (`policies`). */
function jsonKeys(block: string): { name: string; line: number; record: boolean }[] {
  const src = block.replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, ' ')).replace(/\/\/[^\n]*/g, '');
  const keys: { name: string; line: number; record: boolean }[] = [];
  const stack: (string | null)[] = [];
  let lastKey: string | null = null;
  const token = /"((?:[^"\\]|\\.)*)"\s*(:)?|([{[])|([}\]])/g;
  for (const t of src.matchAll(token)) {
    if (t[1] !== undefined && t[2]) {
      const parent = stack.at(-1) ?? null;
      const record = parent !== null && RECORDS.has(parent);
      keys.push({ name: t[1], line: src.slice(0, t.index).split('\n').length, record });
      lastKey = t[1];
    } else if (t[3]) {
      stack.push(t[3] === '{' ? lastKey : (stack.at(-1) ?? null));
      lastKey = null;
    } else if (t[4]) {
      stack.pop();
    }
  }
  return keys;
}

describe('the docs name only what exists', () => {
  it('finds the names it checks (scripts, commands, config keys)', () => {
    expect(scripts.has('start') && scripts.has('docs:config')).toBe(true);
    expect([...commands]).toEqual(expect.arrayContaining(['status', 'repair', 'rescue', 'check-deploy', 'rotate-keys']));
    expect(names.has('tenantShare') && names.has('binding')).toBe(true);
    // The checker catches each kind of stale name.
    const stale = [
      'npm run no-such-script',
      'npx shardgate frobnicate',
      '`ops.noSuchKey`',
      'see engine/no-such-file.ts',
      '```jsonc\n{ "policies": { "mine": { "k": 4, "mm": 2 } }, "scrubb": {} }\n```',
    ].join('\n');
    expect(problems('fixture.md', stale).map((p) => p.replace(/^fixture\.md:\d+: /, ''))).toEqual([
      'file "engine/no-such-file.ts" does not exist',
      'npm script "no-such-script" is not in package.json',
      'shardgate command "frobnicate" is not in cli/commands/',
      'config key "mm" is not in the schema',
      'config key "scrubb" is not in the schema',
      'config path "ops.noSuchKey" is not in the schema',
    ]);
  });

  for (const file of DOCS) {
    it(file, () => {
      expect(problems(file, text(file))).toEqual([]);
    });
  }
});

describe('docs/CONFIG.md', () => {
  it('is what `npm run docs:config` generates from the schema', () => {
    const committed = readFileSync(join(ROOT, CONFIG_MD), 'utf8');
    expect(committed === render(), `${CONFIG_MD} differs from the schema: run npm run docs:config and commit it`).toBe(true);
  });

  it('names every key the schema has, with its default and the comment above it', () => {
    const text = render();
    const paths = rows().map((r) => r.path);
    for (const key of [
      'backends[].kind',
      'backends[].binding',
      'policies.<name>.small.threshold',
      'codingBudget.tenantShare',
      'encryption.keys[].id',
      'ops.metricsTokenSecret',
    ]) {
      expect(paths).toContain(key);
    }
    expect(text).toMatch(/\| `garbageGraceSeconds` \| integer \(≥ 0\) \|  \| `3600` \| Delay before superseded or orphaned shards are deleted\. \|/);
    expect(text).toMatch(/\| `backends\[\]\.binding` \| string \(non-empty\) \| yes \|  \| \(r2 only\) \|/);
  });
});
