/** `npm run reset` (dev/reset.ts): deletes the local state directory it is given, and says so. */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { ROOT } from '../../dev/paths.ts';

it('npm run reset removes the state directory (and is fine when there is none)', async () => {
  const parent = mkdtempSync(join(tmpdir(), 'shardgate-reset-'));
  try {
    const state = join(parent, 'state');
    mkdirSync(join(state, 'v3', 'r2'), { recursive: true });
    writeFileSync(join(state, 'v3', 'r2', 'blob'), 'x');
    const reset = () => promisify(execFile)(process.execPath, ['--import', 'tsx', 'dev/reset.ts', '--persist-to', state], { cwd: ROOT });
    expect((await reset()).stdout).toContain(`removed ${state}`);
    expect(existsSync(state)).toBe(false);
    expect((await reset()).stdout).toContain('nothing to reset');
  } finally {
    rmSync(parent, { recursive: true, force: true });
  }
});
