/**
 * The layering of docs/ARCHITECTURE.md, checked by reading imports (type-only ones count too):
 * which folder may import which, that the engine is reached only through its public face
 * (worker/engine/index.ts), and no import cycle between files or between folders.
 * A new import that breaks a rule fails here, naming the file and the import.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** The rooms, and the rooms each may import from (its own always allowed). */
const ALLOWED: Record<string, string[]> = {
  'worker/model': ['coder-wasm'],
  'worker/auth': ['worker/model'],
  'worker/s3': ['worker/model'],
  // The stored format: manifest and unit records, ids, shard keys, layout, the shard file codec.
  'worker/format': ['worker/model', 'coder-wasm'],
  'worker/catalog': ['worker/model', 'worker/format'],
  'worker/engine': ['worker/model', 'worker/catalog', 'worker/format', 'backends', 'coder-wasm'],
  'worker/upkeep': ['worker/engine', 'worker/catalog', 'worker/format', 'worker/model', 'backends', 'coder-wasm'],
  // What the gateway knows about itself: counts, the shared record, status, metrics, the page
  // (which signs its reads with the gate's own SigV4 steps, auth/sigv4.ts).
  'worker/ops': ['worker/catalog', 'worker/format', 'worker/model', 'worker/auth', 'backends'],
  // The configuration: one schema, the deployment review, the price list.
  // It builds the key ring (format/seal.ts) from the config's keys and the Worker's secrets.
  'worker/config': ['worker/model', 'worker/format', 'worker/engine', 'worker/s3', 'backends'],
  // Adoption of an existing bucket (issue 41): a store layered on the ObjectStore contract, and
  // the source bucket's client, signed as the S3 backend signs.
  'worker/adopt': ['worker/model', 'backends'],
  // The HTTP app: routes, auth gate, admin and operator routes, error map, request log and scope.
  // Its admin routes drive adoption's backfill (issue 41), as they drive upkeep's jobs.
  'worker/app': [
    'worker/adopt',
    'worker/model',
    'worker/format',
    'worker/auth',
    'worker/s3',
    'worker/catalog',
    'worker/engine',
    'worker/upkeep',
    'worker/ops',
    'worker/config',
    'backends',
  ],
  // The entry and the composition root at the top of worker/ compose everything.
  worker: [
    'worker/adopt',
    'worker/model',
    'worker/format',
    'worker/auth',
    'worker/s3',
    'worker/catalog',
    'worker/engine',
    'worker/upkeep',
    'worker/ops',
    'worker/app',
    'worker/config',
    'backends',
    'coder-wasm',
  ],
  backends: [],
  'coder-wasm': [],
  // The ops command line (Node): reuses the Worker's code (format, readers, coder); nothing in
  // worker/ may import it.
  // It also reads the config schema, deployment review and price list (worker/config/):
  // `check-deploy` reviews a file exactly as a deployed gateway reviews its config.
  cli: ['worker/config', 'worker/model', 'worker/format', 'worker/catalog', 'worker/engine', 'worker/ops', 'backends', 'coder-wasm'],
};

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(join(ROOT, path)).isDirectory()) return ['dist', 'src', 'tools', 'target', 'node_modules'].includes(name) ? [] : sources(path);
    return /\.ts$/.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The engine's public face: the one file of worker/engine/ that other rooms may import. */
const ENGINE_FACE = 'worker/engine/index.ts';

const roomOf = (file: string): string => {
  const parts = file.split('/');
  return parts[0] === 'worker' && parts.length > 2 ? `worker/${parts[1]}` : parts[0]!;
};

/** file -> the project files it imports (relative imports only; packages and node: are not rooms). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of [...sources('worker'), ...sources('backends'), ...sources('coder-wasm'), ...sources('cli')]) {
    const text = readFileSync(join(ROOT, file), 'utf8');
    const targets = [...text.matchAll(/^\s*(?:import|export)\b[^'";]*?from\s*'(\.[^']+)'/gm)].map((m) => relative(ROOT, resolve(ROOT, dirname(file), m[1]!)));
    graph.set(
      file,
      targets.filter((t) => t.endsWith('.ts')),
    );
  }
  return graph;
}

function findCycle(edges: Map<string, Set<string>>): string[] | null {
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (n: string): string[] | null => {
    if (state.get(n) === 'done') return null;
    if (state.get(n) === 'open') return [...stack.slice(stack.indexOf(n)), n];
    state.set(n, 'open');
    stack.push(n);
    for (const m of edges.get(n) ?? []) {
      const c = visit(m);
      if (c) return c;
    }
    stack.pop();
    state.set(n, 'done');
    return null;
  };
  for (const n of edges.keys()) {
    const c = visit(n);
    if (c) return c;
  }
  return null;
}

describe('architecture', () => {
  const graph = importGraph();

  it('every room imports only the rooms below it', () => {
    const violations: string[] = [];
    for (const [file, targets] of graph) {
      const room = roomOf(file);
      for (const t of targets) {
        const to = roomOf(t);
        if (to !== room && !ALLOWED[room]!.includes(to)) violations.push(`${file} imports ${t} (${room} -> ${to})`);
      }
    }
    expect(violations).toEqual([]);
  });

  it('outside the engine, only its public face is imported (test/ and bench/ are not checked)', () => {
    const violations: string[] = [];
    for (const [file, targets] of graph) {
      if (roomOf(file) === 'worker/engine') continue;
      for (const t of targets) if (roomOf(t) === 'worker/engine' && t !== ENGINE_FACE) violations.push(`${file} imports ${t} (import ${ENGINE_FACE})`);
    }
    expect(violations).toEqual([]);
  });

  it('no import cycle between files', () => {
    expect(findCycle(new Map([...graph].map(([f, ts]) => [f, new Set(ts)])))).toBeNull();
  });

  it('no import cycle between rooms', () => {
    const rooms = new Map<string, Set<string>>();
    for (const [file, targets] of graph) {
      const set = rooms.get(roomOf(file)) ?? new Set();
      for (const t of targets) if (roomOf(t) !== roomOf(file)) set.add(roomOf(t));
      rooms.set(roomOf(file), set);
    }
    expect(findCycle(rooms)).toBeNull();
  });

  it('the checker sees imports: it finds the known edges', () => {
    expect(graph.get('worker/engine/ec-store.ts')).toContain('worker/catalog/types.ts');
    expect(graph.get('worker/app/app.ts')).toContain('worker/s3/router.ts');
    expect(graph.get('cli/rescue/read.ts')).toContain(ENGINE_FACE);
    expect(graph.get('worker/upkeep/repair.ts')).toContain(ENGINE_FACE);
  });
});
