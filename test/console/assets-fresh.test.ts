/**
 * The console's committed bundle (worker/app/console/assets.gen.ts) is what console/ builds to
 * now: a change to the console's sources without `npm run build:console` fails here, not in a
 * user's browser. The build is reproducible (the same sources give the same bytes and hashes).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ASSETS_MODULE, assetsModule, buildConsole } from '../../dev/console-build.ts';
import { ROOT } from '../support/worker.ts';

describe('the console bundle', () => {
  it('is fresh: the committed module equals a build of console/ now', async () => {
    const built = await buildConsole();
    expect(readFileSync(join(ROOT, ASSETS_MODULE), 'utf8') === assetsModule(built), `${ASSETS_MODULE} is stale: run npm run build:console`).toBe(true);
    expect(built.script.length).toBeGreaterThan(10_000);
    // No eval and no inline-style machinery that the CSP would refuse at run time.
    expect(built.script).not.toMatch(/\beval\(|new Function\(|\.innerHTML\s*=/);
  });
});
