/**
 * The short soak of issue 19 (the half-hour one is `npm run soak:budget`, figures in
 * BENCHMARKS.md): 8 clients of mixed traffic for 20 s with one download in ten abandoned, through
 * the gateway in workerd over six s3rver processes, in rounds of 5 s. No request fails, the budget
 * is idle exactly at rest after every round, and nothing was reclaimed (every request gave back
 * what it took by itself).
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { S3rverProcess } from '../backends/s3rver-harness.ts';
import { soak } from '../support/soak-traffic.ts';
import { DEV_CREDENTIALS, disposeServers, gatewayConfig, startGateway, startServers, type Gateway } from './gateway-harness.ts';

let servers: S3rverProcess[] = [];
let gateway: Gateway | undefined;

beforeAll(async () => {
  servers = await startServers(6);
  gateway = await startGateway(gatewayConfig(servers, { timeoutMs: 30_000 }));
}, 180_000);

afterAll(async () => {
  await gateway?.dispose().catch(() => {});
  await disposeServers(servers);
}, 120_000);

test('20 s of mixed traffic, 10% of downloads abandoned: no failure, the budget idle exactly at rest after every round', async () => {
  const endpoint = (await gateway!.directUrl()).origin;
  const result = await soak({
    client: gateway!.client({ endpoint }),
    endpoint,
    credentials: DEV_CREDENTIALS,
    bucket: 'soak',
    durationMs: 20_000,
    roundMs: 5_000,
    clients: 8,
    abandonShare: 0.1,
    sampleMs: 500,
  });
  expect(result.errors, 'failed requests').toEqual([]);
  expect(result.requests['GetObject abandoned'] ?? 0, 'abandoned downloads').toBeGreaterThan(5);
  expect(result.samples.length, 'budget samples').toBeGreaterThan(10);
  expect(result.atRest.length, 'rounds').toBeGreaterThanOrEqual(4);
  for (const [i, rest] of result.atRest.entries())
    expect(rest, `the budget at rest after round ${i + 1}`).toMatchObject({ heldBytes: 0, holders: 0, waiters: 0, reclaimed: 0 });
}, 300_000);
