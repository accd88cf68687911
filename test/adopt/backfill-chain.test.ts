/**
 * Issue 41, the backfill without waiting for the cron (adopt/backfill-chain.ts): with a queue, an
 * active backfill runs link after link (bounded runs from the checkpoint) until the pass ends;
 * a link lost with its isolate is taken over by the cron once its claim is stale (on a driven
 * clock), one chain per bucket, a paused backfill ends its chain and the cron leaves it be, a
 * source that stops answering ends the chain (no tight loop). Without a queue the cron runs one
 * bounded batch per run itself. The queue is the test's array of links (as REPAIR_QUEUE delivers them).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { BackfillService } from '../../worker/adopt/backfill-service.ts';
import { pauseBackfill, startBackfill } from '../../worker/adopt/backfill-control.ts';
import {
  ADOPT_CHAIN_STALE_MS,
  OBJECTS_PER_CRON_RUN,
  cronAdopt,
  runAdoptLink,
  startAdoptChains,
  type AdoptChainDeps,
  type AdoptLink,
} from '../../worker/adopt/backfill-chain.ts';
import { parseState } from '../../worker/model/adopt-backfill.ts';
import { parseConfig } from '../../worker/config/config.ts';
import { BUCKET, putSource, startAdoptionHarness, type AdoptionHarness } from './harness.ts';

let h: AdoptionHarness;
const policy = parseConfig({
  backends: Array.from({ length: 6 }, (_, i) => ({ id: `m${i}`, kind: 'memory', domain: `z${i}` })),
  policies: { ec: { k: 4, m: 2, blockSize: 65536 } },
  defaultPolicy: 'ec',
}).policies.ec!;

beforeAll(async () => {
  h = await startAdoptionHarness();
}, 30_000);
afterAll(async () => {
  await h?.settled();
  await h?.dispose();
});

const state = async () => parseState(await h.catalog.getAdoptState(BUCKET));

function service(isolate: ReturnType<AdoptionHarness['isolate']>): BackfillService {
  return new BackfillService({
    catalog: h.catalog,
    inner: h.inner,
    adoption: isolate.adoption,
    sources: new Map([[BUCKET, isolate.client]]),
    prices: () => null,
    policy: () => policy,
    storagePrices: () => [],
    now: () => h.clock.now,
  });
}

/** A chain over `queue` driven by an isolate's service: links of 4 objects, pages of 5 keys. */
function chainOf(s: BackfillService, queue: AdoptLink[]): AdoptChainDeps {
  let n = 0;
  return {
    catalog: h.catalog,
    send: async (link) => void queue.push(link),
    run: (bucket, o) => s.run(bucket, { ...o, pageSize: 5 }),
    wantsRun: (bucket) => s.wantsRun(bucket),
    now: () => h.clock.now,
    newId: () => `chain-${++n}-${Math.random()}`,
    renewEveryMs: 3_600_000,
    objectsPerLink: 4,
  };
}

async function seed(prefix: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) await putSource(h, `${prefix}/${i} ü+%.bin`, new Uint8Array(randomBytes(500 + i * 37)));
}

describe('the backfill as a chain of queue links', () => {
  it('runs link after link to the end of the pass; a lost link is taken over by the cron once stale; one chain per bucket', async () => {
    await seed('c', 18);
    await startBackfill(h.catalog, BUCKET, h.clock.now);
    const queue: AdoptLink[] = [];
    const a = h.isolate();
    const chainA = chainOf(service(a), queue);
    expect(await startAdoptChains([BUCKET], chainA)).toBe(1);
    expect(await startAdoptChains([BUCKET], chainA)).toBe(0); // owned: no second chain
    // Two links in isolate A, then A dies with the third link (lost with its in-memory queue).
    for (let i = 0; i < 2; i++) expect((await runAdoptLink(queue.shift()!, chainA)).outcome).toBe('continued');
    expect(queue).toHaveLength(1);
    queue.length = 0;
    expect((await state())?.pass.adopted).toBe(8);
    // The cron a minute later: the claim is fresh (the chain may be alive), nothing started.
    h.clock.now += 60_000;
    expect(await startAdoptChains([BUCKET], chainA)).toBe(0);
    // Past the stale time: isolate B's cron takes over and its chain runs to the end, back to back.
    h.clock.now += ADOPT_CHAIN_STALE_MS;
    const b = h.isolate();
    const chainB = chainOf(service(b), queue);
    expect(await startAdoptChains([BUCKET], chainB)).toBe(1);
    let links = 0;
    let last = 'continued';
    while (queue.length) {
      last = (await runAdoptLink(queue.shift()!, chainB)).outcome;
      links++;
    }
    expect(last).toBe('ended');
    expect(links).toBe(3); // 10 objects left: 4 + 4 + 2, the pass ended in the third
    const s = await state();
    expect(s?.cleanAt).not.toBeNull();
    expect(s?.last).toMatchObject({ listed: 18, adopted: 18, held: 0 });
    expect(a.client.sent.get + b.client.sent.get).toBe(18); // each object read once
    expect(await startAdoptChains([BUCKET], chainB)).toBe(0); // complete: waiting for the next pass
  });

  it('paused: the link ends the chain and the cron starts none; resumed, the cron starts one', async () => {
    await seed('p', 6);
    const queue: AdoptLink[] = [];
    const chain = chainOf(service(h.isolate()), queue);
    await startBackfill(h.catalog, BUCKET, h.clock.now);
    h.clock.now += 25 * 3_600_000; // the next pass is due
    expect(await startAdoptChains([BUCKET], chain)).toBe(1);
    await pauseBackfill(h.catalog, BUCKET);
    expect((await runAdoptLink(queue.shift()!, chain)).outcome).toBe('ended');
    expect(queue).toHaveLength(0);
    expect(await startAdoptChains([BUCKET], chain)).toBe(0);
    await startBackfill(h.catalog, BUCKET, h.clock.now);
    expect(await startAdoptChains([BUCKET], chain)).toBe(1);
    while (queue.length) await runAdoptLink(queue.shift()!, chain);
    expect((await state())?.cleanAt).not.toBeNull();
  });

  it('a source that stops answering ends the chain; the cron starts it again', async () => {
    await seed('d', 3);
    h.clock.now += 25 * 3_600_000;
    let down = true;
    const isolate = h.isolate({ fetch: (req) => (down ? Promise.reject(new TypeError('connect ECONNREFUSED')) : fetch(req)) });
    const queue: AdoptLink[] = [];
    const chain = chainOf(service(isolate), queue);
    expect(await startAdoptChains([BUCKET], chain)).toBe(1);
    const { outcome, report } = await runAdoptLink(queue.shift()!, chain);
    expect(outcome).toBe('ended');
    expect(report?.sourceDown).toBe(true);
    expect(queue).toHaveLength(0);
    down = false;
    expect(await startAdoptChains([BUCKET], chain)).toBe(1); // the chain's claim ended: no wait for staleness
    while (queue.length) await runAdoptLink(queue.shift()!, chain);
    expect((await state())?.last).toMatchObject({ adopted: 3, failed: 0 });
  });

  it('without a queue the cron runs one bounded batch per run itself', async () => {
    await seed('n', OBJECTS_PER_CRON_RUN + 5);
    h.clock.now += 25 * 3_600_000;
    const s = service(h.isolate());
    const cron = () => cronAdopt({ buckets: () => s.buckets(), runAll: (o) => s.runAll(o), chain: null });
    const first = await cron();
    expect(first.chainsStarted).toBe(0);
    expect(first.reports[0]).toMatchObject({ adopted: OBJECTS_PER_CRON_RUN, stopped: true });
    const second = await cron();
    expect(second.reports[0]).toMatchObject({ adopted: 5, passesCompleted: 1 });
    // With a queue the cron starts a chain instead of running a batch.
    h.clock.now += 25 * 3_600_000;
    const queue: AdoptLink[] = [];
    const withQueue = await cronAdopt({ buckets: () => s.buckets(), runAll: (o) => s.runAll(o), chain: chainOf(s, queue) });
    expect(withQueue).toEqual({ chainsStarted: 1, reports: [] });
    expect(queue).toHaveLength(1);
  });

  it("one driver at a time: the operator's adopt and the cron's own batch run nothing while a chain holds the bucket, and run once it ends", async () => {
    await seed('o', 6);
    h.clock.now += 25 * 3_600_000;
    const s = service(h.isolate());
    const queue: AdoptLink[] = [];
    const chain = chainOf(s, queue);
    expect(await startAdoptChains([BUCKET], chain)).toBe(1); // the chain claims the bucket
    const before = await state();
    const direct = await s.start(BUCKET, { maxObjects: 10, ms: 60_000 });
    expect(direct.report).toMatchObject({ idle: 'another run is driving it', listed: 0, adopted: 0 });
    const cron = await cronAdopt({ buckets: () => s.buckets(), runAll: (o) => s.runAll(o), chain: null });
    expect(cron.reports[0]).toMatchObject({ idle: 'another run is driving it', adopted: 0 });
    expect((await state())?.pass).toEqual(before?.pass); // nobody else walked it
    while (queue.length) await runAdoptLink(queue.shift()!, chain); // the chain to its end: its claim ends
    const after = await s.start(BUCKET, { maxObjects: 10, ms: 60_000 });
    expect(after.report.idle).toBeUndefined();
  });
});
