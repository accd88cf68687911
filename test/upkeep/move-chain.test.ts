/**
 * The queue-driven mover (issue 26, upkeep/move-chain.ts) over memory backends and the product's
 * catalog, with the queue as an array the test delivers from:
 * - the claim is a compare-and-set in the bucket's catalog instance: one chain per bucket, a stale
 *   one taken over, the old one stopping when it comes back;
 * - a chain drains a bucket link after link (each link one bounded batch) until nothing is left,
 *   then ends and frees the bucket; the cron's start finds a live chain and starts no second;
 * - a link whose moves must wait (targets down) ends the chain instead of looping;
 * - a bucket deleted under a chain ends it.
 */
import { describe, expect, it } from 'vitest';
import { FaultyBackend, MemoryBackend, type Backend } from '../../backends/index.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { drainBatch, type FleetBackend } from '../../worker/upkeep/drain.ts';
import { drainProgress } from '../../worker/upkeep/drain-progress.ts';
import {
  CHAIN_STALE_MS,
  MOVES_PER_LINK,
  runMoveLink,
  startMoveChains,
  type ChainDeps,
  type LinkOutcome,
  type MoveLink,
} from '../../worker/upkeep/move-chain.ts';
import { restripeBatch } from '../../worker/upkeep/restripe.ts';
import { DEV_KEY_RING } from '../support/dev-encryption.ts';
import { localCatalog } from '../support/local-catalog.ts';

const OBJECTS = 200;

/** Seven backends, every object written while all were active; then m3 drains. */
async function setup() {
  const backends = Array.from({ length: 7 }, (_, i) => new FaultyBackend(new MemoryBackend({ id: `m${i}`, domain: `zone-${i}` })));
  const configOf = (draining: boolean) =>
    parseConfig({
      backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain, ...(draining && b.id === 'm3' ? { state: 'draining' } : {}) })),
      policies: { main: { k: 4, m: 2, blockSize: 4096, small: { threshold: 0 } } },
      defaultPolicy: 'main',
    });
  const catalog = localCatalog({ garbageGraceMs: 1000 });
  const writer = new EcStore({ catalog, units: new UnitStore(backends, () => {}, { keyRing: DEV_KEY_RING }), settings: engineSettings(configOf(false)) });
  await writer.createBucket('b', { region: 'us-east-1' });
  for (let i = 0; i < OBJECTS; i++) {
    const bytes = new Uint8Array(3000 + i).fill(i);
    await writer.putObject('b', `k${i}`, new ReadableStream({ start: (c) => (c.enqueue(bytes), c.close()) }), {
      contentLength: bytes.length,
      metadata: { user: {} },
      checksum: null,
      conditions: {},
    });
  }
  const config = configOf(true);
  const fleet: FleetBackend[] = config.backends.map((b) => ({ id: b.id, domain: b.domain, state: b.state }));
  const byId = new Map<string, Backend>(backends.map((b) => [b.id, b]));
  const units = new UnitStore(backends, () => {}, { keyRing: DEV_KEY_RING, placeOn: fleet.filter((b) => b.state === 'active').map((b) => b.id) });
  const queue: MoveLink[] = [];
  let ids = 0;
  const deps: ChainDeps = {
    catalog,
    send: async (link) => void queue.push(link),
    drain: (o) => drainBatch({ catalog, backends: byId, graceMs: 1000, fleet }, { ...o, deadline: Date.now() + 60_000 }),
    restripe: (o) =>
      restripeBatch(
        { catalog, units, settings: engineSettings(config), graceMs: 1000, writeReservationSeconds: 60, fleet },
        { ...o, deadline: Date.now() + 60_000 },
      ),
    newId: () => `chain-${++ids}`,
  };
  const left = async () => (await drainProgress(catalog, [{ id: 'm3', state: 'draining' }]))[0]!.left.shards;
  /** Delivers queued links until none is left; the outcomes in order. */
  const deliver = async (): Promise<LinkOutcome[]> => {
    const outcomes: LinkOutcome[] = [];
    for (let link = queue.shift(); link; link = queue.shift()) outcomes.push(await runMoveLink(link, deps));
    return outcomes;
  };
  return { backends, catalog, deps, queue, left, deliver };
}

describe('the mover as a chain of queue links', () => {
  it('drains a bucket link after link, one chain at a time, then ends and frees the bucket', async () => {
    const s = await setup();
    const before = await s.left();
    expect(before).toBeGreaterThan(2 * MOVES_PER_LINK);

    expect(await startMoveChains(['b'], s.deps)).toBe(1);
    // The cron's next run finds the chain live and starts no second one.
    expect(await startMoveChains(['b'], s.deps)).toBe(0);
    expect(s.queue).toEqual([{ kind: 'move', bucket: 'b', chain: 'chain-1' }]);

    const outcomes = await s.deliver();
    // Each link moved a batch and sent the next; the last found nothing left and ended.
    expect(outcomes.at(-1)).toBe('ended');
    expect(outcomes.filter((o) => o === 'continued').length).toBe(Math.ceil(before / MOVES_PER_LINK) - (before % MOVES_PER_LINK === 0 ? 0 : 1));
    expect(outcomes).not.toContain('superseded');
    expect(await s.left()).toBe(0);
    // Ended: the bucket is free for the next chain at once (not only after CHAIN_STALE_MS).
    expect(await s.catalog.claimMoveChain('b', 'another', Date.now(), CHAIN_STALE_MS)).toBe(true);
  });

  it("links delivered in one batch split one link's budget (one invocation's subrequests)", async () => {
    const s = await setup();
    const before = await s.left();
    await startMoveChains(['b'], s.deps);
    expect(await runMoveLink(s.queue.shift()!, s.deps, 4)).toBe('continued');
    expect(before - (await s.left())).toBe(MOVES_PER_LINK / 4);
  });

  it('a chain whose last claim is stale is taken over; the old one, coming back, stops without sending', async () => {
    const s = await setup();
    expect(await s.catalog.claimMoveChain('b', 'old', Date.now() - CHAIN_STALE_MS + 60_000, CHAIN_STALE_MS)).toBe(true);
    expect(await startMoveChains(['b'], s.deps)).toBe(0); // still fresh
    expect(await s.catalog.claimMoveChain('b', 'old', Date.now() - CHAIN_STALE_MS - 1, CHAIN_STALE_MS)).toBe(true); // renewed, but long ago
    expect(await startMoveChains(['b'], s.deps)).toBe(1);
    const leftBefore = await s.left();
    expect(await runMoveLink({ kind: 'move', bucket: 'b', chain: 'old' }, s.deps)).toBe('superseded');
    expect(s.queue).toHaveLength(1); // only the new chain's first link
    expect(await s.left()).toBe(leftBefore); // the old link moved nothing
    // Ending a chain that is not the owner changes nothing.
    await s.catalog.endMoveChain('b', 'old');
    expect(await s.catalog.claimMoveChain('b', 'third', Date.now(), CHAIN_STALE_MS)).toBe(false);
  });

  it('a running link keeps its claim fresh, so a slow link is not taken over; once it returns it renews no more', async () => {
    const s = await setup();
    let clock = Date.now();
    let competitor: boolean | undefined;
    const deps: ChainDeps = {
      ...s.deps,
      now: () => clock,
      renewEveryMs: 10,
      drain: async (o) => {
        // The batch outlasts a claim's life twice over; renewal ticks run between the jumps.
        for (let i = 0; i < 2; i++) {
          clock += CHAIN_STALE_MS - 1000;
          await new Promise((r) => setTimeout(r, 60));
        }
        competitor = await s.catalog.claimMoveChain('b', 'other', clock, CHAIN_STALE_MS);
        return s.deps.drain(o);
      },
    };
    expect(await runMoveLink({ kind: 'move', bucket: 'b', chain: 'slow' }, deps)).toBe('continued');
    expect(competitor).toBe(false);
    // The link returned: nothing renews its claim any more, and it goes stale.
    clock += CHAIN_STALE_MS + 1;
    await new Promise((r) => setTimeout(r, 60));
    expect(await s.catalog.claimMoveChain('b', 'other', clock, CHAIN_STALE_MS)).toBe(true);
  });

  it('a link whose moves must wait (every target down) ends the chain rather than loop', async () => {
    const s = await setup();
    for (const b of s.backends) if (b.id !== 'm3') b.goOffline();
    await startMoveChains(['b'], s.deps);
    const outcomes = await s.deliver();
    expect(outcomes).toEqual(['ended']);
    expect(await s.left()).toBeGreaterThan(0);
    // The cron's next run starts it again; with the targets back, it finishes.
    for (const b of s.backends) b.goOnline();
    expect(await startMoveChains(['b'], s.deps)).toBe(1);
    expect((await s.deliver()).at(-1)).toBe('ended');
    expect(await s.left()).toBe(0);
  });

  it('a bucket deleted under a chain ends it', async () => {
    const s = await setup();
    expect(await runMoveLink({ kind: 'move', bucket: 'gone', chain: 'x' }, s.deps)).toBe('ended');
    expect(await startMoveChains(['gone'], s.deps)).toBe(0);
    expect(s.queue).toEqual([]);
  });
});
