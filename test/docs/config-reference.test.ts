/**
 * docs/CONFIG.md is generated from the zod schema (dev/config-reference.ts, `npm run docs:config`):
 * the committed file must be what the schema generates now, so a key added, removed or given a new
 * default without regenerating fails here.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONFIG_MD, render, rows } from '../../dev/config-reference.ts';
import { ROOT } from '../support/worker.ts';

describe('docs/CONFIG.md', () => {
  it('is what `npm run docs:config` generates from the schema', () => {
    const committed = readFileSync(join(ROOT, CONFIG_MD), 'utf8');
    expect(committed === render(), `${CONFIG_MD} differs from the schema: run npm run docs:config and commit it`).toBe(true);
  });

  it('names every key the schema has, with its default and the comment above it', () => {
    const text = render();
    const paths = rows().map((r) => r.path);
    for (const key of ['backends[].kind', 'backends[].binding', 'policies.<name>.small.threshold', 'codingBudget.tenantShare', 'encryption.keys[].id', 'ops.metricsTokenSecret']) {
      expect(paths).toContain(key);
    }
    expect(text).toMatch(/\| `garbageGraceSeconds` \| integer \(≥ 0\) \|  \| `3600` \| Delay before superseded or orphaned shards are deleted\. \|/);
    expect(text).toMatch(/\| `backends\[\]\.binding` \| string \(non-empty\) \| yes \|  \| \(r2 only\) \|/);
  });
});
