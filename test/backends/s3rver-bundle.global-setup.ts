// vitest globalSetup of the root project: s3rver bundled once for the run (s3rver-bundle.ts); the
// test workers, and the s3rver processes they start, inherit its path in the environment.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleS3rver, S3RVER_BUNDLE_ENV } from './s3rver-bundle.ts';

export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  if (process.env[S3RVER_BUNDLE_ENV]) return undefined;
  const dir = await mkdtemp(join(tmpdir(), 'shardgate-s3rver-bundle-'));
  process.env[S3RVER_BUNDLE_ENV] = await bundleS3rver(dir);
  return async () => {
    delete process.env[S3RVER_BUNDLE_ENV];
    await rm(dir, { recursive: true, force: true });
  };
}
