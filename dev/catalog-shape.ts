/**
 * The catalog's shape, counted (docs/ARCHITECTURE.md, "One operation table"; issue 39): port
 * verbs (the methods declared in the port interfaces of worker/catalog/types.ts), the places a
 * verb is spelled outside its SQL (port declarations, hand-written DurableCatalog methods,
 * CatalogObject methods, rows of operations.ts, names in the old fenced-methods.ts), and the
 * longest import chain among worker/catalog's files (type-only imports count, as in
 * test/architecture.test.ts). Reads the source only.
 * Usage: node --import tsx dev/catalog-shape.ts [repository root, default: this one]
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(process.argv[2] ?? fileURLToPath(new URL('../', import.meta.url)));
const catalogFile = (name: string): string => {
  const path = join(root, 'worker/catalog', name);
  return existsSync(path) ? readFileSync(path, 'utf8') : '';
};

// ---- Verbs and their spellings ----
// A port verb: a row of operations.ts naming a port, or an entry of ports.ts's ClientVerbs (a verb
// DurableCatalog answers with no operation). Ports declared by hand (interfaces of types.ts with
// Promise-returning members, as before issue 39's derivation) are still counted if any come back.
const table = catalogFile('operations.ts');
const portsFile = catalogFile('ports.ts');
const ports = new Map<string, string[]>();
const addTo = (port: string, name: string) => ports.set(port, [...(ports.get(port) ?? []), name]);
for (const m of table.matchAll(/^ {2}(\w+): \{\s*port: '(\w+)'/gm)) addTo(m[2]!, m[1]!);
const clientVerbs = /interface ClientVerbs \{([\s\S]*?)\n\}/.exec(portsFile)?.[1] ?? '';
const clientOnly = [...clientVerbs.matchAll(/^ {2}(\w+): '(\w+)'/gm)];
for (const m of clientOnly) addTo(m[2]!, m[1]!);
const declaredPorts = new Map<string, string[]>();
for (const m of catalogFile('types.ts').matchAll(/export interface (\w+)(?: extends [^{]+)? \{([\s\S]*?)\n\}/g)) {
  const names = [...m[2]!.matchAll(/^ {2}(\w+)\(/gm)].map((x) => x[1]!);
  if (names.length && /Promise</.test(m[2]!)) declaredPorts.set(m[1]!, names);
}
const verbs = new Set([...ports.values()].flat());
const declared = (text: string, name: string): number => [...text.matchAll(new RegExp(`^ {2}(?:async |private |static )*${name}\\(`, 'gm'))].length;
const client = catalogFile('durable-catalog.ts');
const object = catalogFile('durable-object.ts');
const fencedList = catalogFile('fenced-methods.ts');
const spelled = { portDeclarations: 0, clientVerbList: 0, clientMethods: 0, objectMethods: 0, tableRows: 0, fencedList: 0 };
for (const v of verbs) {
  spelled.portDeclarations += [...declaredPorts.values()].filter((names) => names.includes(v)).length;
  spelled.clientVerbList += clientOnly.some((m) => m[1] === v) ? 1 : 0;
  spelled.clientMethods += declared(client, v);
  spelled.objectMethods += declared(object, v);
  spelled.tableRows += new RegExp(`^ {2}${v}: \\{`, 'm').test(table) ? 1 : 0;
  spelled.fencedList += fencedList.includes(`'${v}'`) ? 1 : 0;
}
const total = Object.values(spelled).reduce((a, b) => a + b, 0);

// ---- Import depth ----
function sources(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(join(root, path)).isDirectory()) return ['node_modules', 'dist', 'src', 'tools', 'target'].includes(name) ? [] : sources(path);
    return /\.ts$/.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}
const graph = new Map<string, string[]>();
for (const file of sources('worker/catalog')) {
  const text = readFileSync(join(root, file), 'utf8');
  const targets = [...text.matchAll(/^\s*(?:import|export)\b[^'";]*?from\s*'(\.[^']+)'/gm)].map((m) => relative(root, resolve(root, dirname(file), m[1]!)));
  graph.set(
    file,
    targets.filter((t) => t.startsWith('worker/catalog/') && t.endsWith('.ts')),
  );
}
const longest = new Map<string, string[]>();
const chainFrom = (file: string): string[] => {
  const known = longest.get(file);
  if (known) return known;
  let best = [file];
  for (const next of graph.get(file) ?? []) {
    const chain = chainFrom(next);
    if (chain.length + 1 > best.length) best = [file, ...chain];
  }
  longest.set(file, best);
  return best;
};
const deepest = [...graph.keys()].map(chainFrom).reduce((a, b) => (b.length > a.length ? b : a), [] as string[]);

console.log(`ports: ${ports.size} (${[...ports.keys()].join(', ')})`);
console.log(`port verbs: ${verbs.size}; listBucketRecords declared in ${[...ports.values()].filter((n) => n.includes('listBucketRecords')).length} port(s)`);
console.log(`spellings outside the SQL: ${total} (${(total / verbs.size).toFixed(2)} a verb): ${JSON.stringify(spelled)}`);
const objectOnly = total - spelled.objectMethods;
console.log(`counting the CatalogObject method as the verb's SQL: ${objectOnly} (${(objectOnly / verbs.size).toFixed(2)} a verb beside it)`);
console.log(`files in worker/catalog: ${graph.size}; longest import chain among them: ${deepest.length} files`);
console.log(`  ${deepest.map((f) => f.replace('worker/catalog/', '')).join(' -> ')}`);
