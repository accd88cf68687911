// vitest globalSetup of the root project: the gateway's Worker (worker/index.ts) bundled once for
// the run, which every later bundle of it with no plugins copies (dev/worker-bundle.ts
// PREBUILT_BUNDLE_ENV) instead of running esbuild again. Not in watch mode, where a rerun must
// see the edits made since the start.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { prebuildBundle, PREBUILT_BUNDLE_ENV } from '../../dev/worker-bundle.ts';
import { ROOT } from '../../dev/paths.ts';

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  if (project.vitest.config.watch || process.env[PREBUILT_BUNDLE_ENV]) return undefined;
  const dir = await mkdtemp(join(tmpdir(), 'shardgate-prebuilt-'));
  await prebuildBundle(join(ROOT, 'worker/index.ts'), dir);
  process.env[PREBUILT_BUNDLE_ENV] = dir;
  return async () => {
    delete process.env[PREBUILT_BUNDLE_ENV];
    await rm(dir, { recursive: true, force: true });
  };
}
