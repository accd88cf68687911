/**
 * Smoke tests with real command-line S3 clients: awscli, rclone and s3cmd, as `.ci/run`
 * installs them from Debian, against the gateway as `npm start` serves it (wrangler.toml's
 * embedded 4+2 pool of local R2 buckets and Durable Object catalog). One gateway, with a fresh
 * state directory, for the whole file; each client works in its own bucket.
 *
 * A client that is not installed skips its own cases (needs(), test/support/prerequisites.ts),
 * and the gateway is not even started when none is; SHARDGATE_SKIP_CLI=1 skips them on purpose.
 * Slow on two cores: the timeouts are generous and nothing is timed.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe } from 'vitest';
import { awscliCases } from './awscli.case.ts';
import type { CliContext } from './context.ts';
import { writeFixtures } from './fixtures.ts';
import { GatewayObserver, startGateway, type RunningGateway } from './gateway.ts';
import { rcloneCases } from './rclone.case.ts';
import { s3cmdCases } from './s3cmd.case.ts';
import { versionCases } from './versions.case.ts';
import { needs } from '../support/prerequisites.ts';
import { failFastOnceUnanswered } from '../support/wedged.ts';

/** Each client's cases skip themselves; with no client at all, nothing is started. */
const NO_CLIENT = needs('awscli').skip && needs('rclone').skip && needs('s3cmd').skip;

describe('command-line S3 clients against the local gateway (npm start)', { timeout: 300_000, skip: NO_CLIENT }, () => {
  let sandbox: string | undefined;
  let gateway: RunningGateway | undefined;
  let ctx: CliContext;

  beforeAll(async () => {
    sandbox = await mkdtemp(join(tmpdir(), 'shardgate-cli-'));
    await mkdir(join(sandbox, 'files'));
    const files = await writeFixtures(join(sandbox, 'files'));
    gateway = await startGateway(join(sandbox, 'state'));
    ctx = { url: gateway.url, observer: new GatewayObserver(gateway.url), files, sandbox };
  }, 240_000);

  afterAll(async () => {
    await gateway?.dispose();
    if (sandbox) await rm(sandbox, { recursive: true, force: true });
  }, 120_000);

  // Once the gateway stops answering, every later test fails at once with that reason instead of
  // waiting out its clients' retries (CI has a deadline; a wedged workerd once cost it hours).
  failFastOnceUnanswered(() => ctx.observer.unresponsive(30_000), { timeoutMs: 60_000, beforeToo: true });

  const suite = () => ctx;
  awscliCases(suite);
  rcloneCases(suite);
  s3cmdCases(suite);
  versionCases(suite);
});
