/**
 * docs/CONFIG.md, generated from the gateway's one zod schema (worker/config/config.ts), so the
 * reference cannot drift from what the gateway parses: every key with its type, constraints and
 * default from the schema itself (zod's JSON Schema of its input), and its description from the
 * doc comment above it in config.ts (read with the TypeScript compiler's parser).
 *
 *   npm run docs:config            writes docs/CONFIG.md
 *   npm run docs:config -- --check exits 1 when the committed file differs (test/docs/docs.test.ts)
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { z } from 'zod';
import { configSchema } from '../worker/config/config.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const SCHEMA_FILE = 'worker/config/config.ts';
export const CONFIG_MD = 'docs/CONFIG.md';

type Json = { [key: string]: any };

/** Doc comments of config.ts by key path (`backends[].state`, `policies.<name>.k`), following the consts the schema is built from. */
export function docComments(source = readFileSync(join(ROOT, SCHEMA_FILE), 'utf8')): Map<string, string> {
  const file = ts.createSourceFile(SCHEMA_FILE, source, ts.ScriptTarget.Latest, true);
  const consts = new Map<string, { init: ts.Expression; doc: string }>();
  for (const st of file.statements) {
    if (!ts.isVariableStatement(st)) continue;
    for (const d of st.declarationList.declarations) {
      if (ts.isIdentifier(d.name) && d.initializer) consts.set(d.name.text, { init: d.initializer, doc: jsDoc(st) });
    }
  }
  const out = new Map<string, string>();
  const seen = new Set<ts.Node>();
  /** Collects the keys of every object literal reachable from `node` under `path`. */
  const walk = (node: ts.Node, path: string): void => {
    if (seen.has(node)) return;
    if (ts.isIdentifier(node) && consts.has(node.text)) {
      const c = consts.get(node.text)!;
      if (c.doc && path && !out.has(path)) out.set(path, c.doc);
      walk(c.init, path);
      return;
    }
    if (ts.isObjectLiteralExpression(node)) {
      for (const p of node.properties) {
        if (ts.isSpreadAssignment(p)) {
          walk(p.expression, path);
          continue;
        }
        if (!ts.isPropertyAssignment(p) || !(ts.isIdentifier(p.name) || ts.isStringLiteral(p.name))) continue;
        const key = (path ? `${path}.` : '') + p.name.text;
        const doc = jsDoc(p);
        if (doc) out.set(key, doc);
        walk(p.initializer, key);
      }
      return;
    }
    if (ts.isCallExpression(node)) {
      const callee = node.expression;
      const name = ts.isPropertyAccessExpression(callee) ? callee.name.text : '';
      // .default({...}) repeats the keys' values, not their schema: never a place of keys.
      if (name === 'default') {
        walk((callee as ts.PropertyAccessExpression).expression, path);
        return;
      }
      const suffix = name === 'array' ? '[]' : name === 'record' ? '.<name>' : '';
      const args = name === 'record' ? node.arguments.slice(1) : node.arguments;
      for (const a of args) walk(a, path + suffix);
      walk(callee, path);
      return;
    }
    if (ts.isPropertyAccessExpression(node)) {
      walk(node.expression, path);
      return;
    }
    if (ts.isArrayLiteralExpression(node)) {
      for (const e of node.elements) walk(e, path);
      return;
    }
    if (ts.isArrowFunction(node)) return;
    ts.forEachChild(node, (c) => walk(c, path));
  };
  walk(consts.get('configSchema')!.init, '');
  return out;
}

function jsDoc(node: ts.Node): string {
  const docs = (node as { jsDoc?: ts.JSDoc[] }).jsDoc;
  if (!docs?.length) return '';
  const c = docs[docs.length - 1]!.comment;
  const text = typeof c === 'string' ? c : (c ?? []).map((p) => p.text).join('');
  return text.replace(/\s*\n\s*/g, ' ').trim();
}

interface Row {
  path: string;
  type: string;
  required: boolean;
  default?: unknown;
  constraints: string[];
  only?: string[];
}

/** The rows of the reference: one per key, in the schema's order. */
export function rows(): Row[] {
  const schema = z.toJSONSchema(configSchema, { io: 'input', unrepresentable: 'any' }) as Json;
  const out: Row[] = [];
  const byPath = new Map<string, Row>();
  const visit = (s: Json, path: string, required: boolean, only?: string): void => {
    const variants: Json[] = s.oneOf ?? s.anyOf ?? [];
    const objects = variants.filter((v) => v.type === 'object' && v.properties);
    if (path) {
      let row = byPath.get(path);
      if (!row) {
        row = { path, type: typeOf(s), required, default: s.default, constraints: constraints(s), ...(only ? { only: [only] } : {}) };
        byPath.set(path, row);
        out.push(row);
      } else {
        if (only && row.only && !row.only.includes(only)) row.only.push(only);
        // backends[].kind: one const per member of the union
        if (s.const !== undefined && !row.type.split(' | ').includes(JSON.stringify(s.const))) row.type += ` | ${JSON.stringify(s.const)}`;
      }
    }
    if (s.type === 'object' && s.properties) {
      for (const [k, v] of Object.entries<Json>(s.properties)) visit(v, path ? `${path}.${k}` : k, (s.required ?? []).includes(k), only);
    }
    if (s.type === 'object' && s.additionalProperties && typeof s.additionalProperties === 'object' && s.additionalProperties.type === 'object') {
      visit(s.additionalProperties, `${path}.<name>`, true, only);
    }
    if (s.type === 'array' && s.items) {
      const items = s.items as Json;
      const members: Json[] = items.oneOf ?? [];
      const kinds = members.map((m) => m.properties?.kind?.const as string | undefined);
      if (members.length && kinds.every(Boolean)) {
        members.forEach((m, i) => visit({ ...m, default: undefined }, `${path}[]`, true, kinds.length > 1 ? kinds[i] : undefined));
      } else if (items.type === 'object' || objects.length || (items.anyOf ?? items.oneOf ?? []).some((v: Json) => v.type === 'object' && v.properties)) {
        // (the last: items that are a name or an object, as encryption.kmsKeys' entries)
        visit(items, `${path}[]`, true, only);
      }
    }
    for (const o of objects) if (s.type !== 'object') visit({ ...o, default: undefined }, path, required, only);
  };
  visit(schema, '', true);
  // A key every kind has is not "only" any of them.
  const kindCount = new Set(out.flatMap((r) => r.only ?? [])).size;
  for (const r of out) if (r.only && r.only.length === kindCount) delete r.only;
  // Top-level defaults zod's JSON Schema leaves out (a default around a preprocess): from the schema itself.
  for (const r of out) {
    const field = (configSchema.shape as Record<string, z.ZodType>)[r.path];
    if (r.default === undefined && field instanceof z.ZodDefault) r.default = field.def.defaultValue;
  }
  return out;
}

function typeOf(s: Json): string {
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (s.enum) return s.enum.map((e: unknown) => JSON.stringify(e)).join(' | ');
  const variants: Json[] | undefined = s.oneOf ?? s.anyOf;
  if (variants) return [...new Set(variants.map(typeOf))].join(' | ');
  if (s.type === 'array') {
    const item = s.items ? typeOf(s.items) : 'any';
    return item.includes(' | ') ? `(${item})[]` : `${item}[]`;
  }
  if (s.type === 'object')
    return s.additionalProperties && typeof s.additionalProperties === 'object' ? `{ name: ${typeOf(s.additionalProperties)} }` : 'object';
  if (Array.isArray(s.type)) return s.type.join(' | ');
  return s.type ?? 'any';
}

function constraints(s: Json): string[] {
  const c: string[] = [];
  const big = (n: number) => Math.abs(n) >= Number.MAX_SAFE_INTEGER;
  if (s.minimum !== undefined && !big(s.minimum)) c.push(`≥ ${s.minimum}`);
  if (s.exclusiveMinimum !== undefined) c.push(`> ${s.exclusiveMinimum}`);
  if (s.maximum !== undefined && !big(s.maximum)) c.push(`≤ ${s.maximum}`);
  if (s.minLength) c.push('non-empty');
  if (s.minItems) c.push(`at least ${s.minItems}`);
  if (s.pattern) c.push(`matches \`${s.pattern}\``);
  if (s.format) c.push(s.format);
  return c;
}

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** The whole docs/CONFIG.md. */
export function render(): string {
  const docs = docComments();
  const lines = [
    '# Configuration reference',
    '',
    '<!-- Generated by `npm run docs:config` (dev/config-reference.ts) from worker/config/config.ts. Do not edit by hand:',
    '     test/docs/docs.test.ts fails when this file differs from a fresh generation. -->',
    '',
    "Every key of the `SHARDGATE_CONFIG` document (JSON), from the gateway's one zod schema",
    '(`worker/config/config.ts`): its type and constraints, whether it is required, its default, and',
    "the schema's own comment. Unknown keys are refused (every object is strict). A guide with an",
    'example: [CONFIGURATION.md](CONFIGURATION.md). `backends[]` keys marked with a kind exist only',
    'for that kind (`"kind": "r2"`, `"s3"`, `"memory"`).',
    '',
    '| key | type | required | default | description |',
    '| --- | --- | --- | --- | --- |',
  ];
  const all = rows();
  // An array's element row (`credentials[]`) says nothing its array's row does not: its comment, if any, goes there.
  for (const r of all) if (r.path.endsWith('[]') && docs.has(r.path) && !docs.has(r.path.slice(0, -2))) docs.set(r.path.slice(0, -2), docs.get(r.path)!);
  for (const r of all.filter((r) => !r.path.endsWith('[]'))) {
    const doc = docs.get(r.path) ?? '';
    const only = r.only ? `(${r.only.join(', ')} only)${doc ? ' ' : ''}` : '';
    const cons = r.constraints.length ? ` (${r.constraints.join(', ')})` : '';
    const def = r.default === undefined ? '' : `\`${JSON.stringify(r.default)}\``;
    lines.push(`| \`${r.path}\` | ${cell(r.type)}${cell(cons)} | ${r.required && r.default === undefined ? 'yes' : ''} | ${cell(def)} | ${cell(only + doc)} |`);
  }
  return lines.join('\n') + '\n';
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const text = render();
  const path = join(ROOT, CONFIG_MD);
  if (process.argv.includes('--check')) {
    const committed = readFileSync(path, 'utf8');
    if (committed !== text) {
      console.error(`${CONFIG_MD} differs from the schema: run npm run docs:config and commit it`);
      process.exit(1);
    }
    console.log(`${CONFIG_MD} matches the schema`);
  } else {
    writeFileSync(path, text);
    console.log(`wrote ${CONFIG_MD} (${text.split('\n').length} lines)`);
  }
}
