/**
 * IsolateShared (worker/model/isolate-shared.ts): an isolate's shared value that no request gets
 * as another request's pending promise. Workers cancel a request waiting on another's I/O as
 * hung (the partitions bench met it: the catalog-loss gate's shared read failed up to 15 of 64
 * concurrent writes with "the Workers runtime canceled this request"), so each case checks what
 * a request waits on, with computations held open by hand.
 */
import { describe, expect, it } from 'vitest';
import { IsolateShared } from '../../worker/model/isolate-shared.ts';
import { CatalogLossGate, REFRESH_MS } from '../../worker/app/catalog-loss-gate.ts';
import type { CatalogLoss } from '../../worker/catalog/types.ts';

/** A computation held open until `finish` (or `fail`) is called: like a catalog read in flight. */
function held<T>() {
  let finish!: (v: T) => void;
  let fail!: (e: unknown) => void;
  let started = 0;
  const compute = () => {
    started++;
    return new Promise<T>((resolve, reject) => ((finish = resolve), (fail = reject)));
  };
  return { compute, finish: (v: T) => finish(v), fail: (e: unknown) => fail(e), started: () => started };
}

/** Whether `p` has settled after the microtasks and timers now due have run. */
async function settled(p: Promise<unknown>, ms = 0): Promise<boolean> {
  let done = false;
  void p.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((r) => setTimeout(r, ms));
  return done;
}

describe('IsolateShared', () => {
  it('answers a fresh value without computing, and a stale one to requests arriving while another computes the next', async () => {
    let clock = 1000;
    const shared = new IsolateShared<string>({ freshMs: 100, staleMs: 200, now: () => clock });
    shared.set('first');
    const never = () => Promise.reject(new Error('computed'));
    expect(await shared.get(never)).toBe('first');
    clock += 100; // stale now: the first request computes, the next ones take the last value
    const slow = held<string>();
    const computing = shared.get(slow.compute);
    expect(await settled(computing)).toBe(false);
    for (let i = 0; i < 5; i++) expect(await shared.get(never)).toBe('first');
    expect(slow.started()).toBe(1);
    slow.finish('second');
    expect(await computing).toBe('second');
    expect(await shared.get(never)).toBe('second');
  });

  it("never hands a request another's pending computation: with no value to use it waits with its own timers, then computes its own", async () => {
    const shared = new IsolateShared<string>({ freshMs: 100, staleMs: 200, waitMs: 60 });
    const stuck = held<string>(); // a computation whose request was cancelled: it never settles
    void shared.get(stuck.compute);
    const own = held<string>();
    const second = shared.get(own.compute);
    expect(await settled(second, 20)).toBe(false); // waiting, on its timers
    await new Promise((r) => setTimeout(r, 80));
    expect(own.started()).toBe(1); // gave up waiting: its own computation
    own.finish('mine');
    expect(await second).toBe('mine');
  });

  it("takes another's result once it lands while waiting: one computation for a burst", async () => {
    const shared = new IsolateShared<string>({ freshMs: 100_000, staleMs: 200_000, waitMs: 5000 });
    const first = held<string>();
    const burst = [shared.get(first.compute), ...Array.from({ length: 9 }, () => shared.get(() => Promise.reject(new Error('second computation'))))];
    await new Promise((r) => setTimeout(r, 30));
    first.finish('one');
    expect(await Promise.all(burst)).toEqual(Array(10).fill('one'));
    expect(first.started()).toBe(1);
  });

  it('keeps the last value when a computation fails, and a value set meanwhile over an older computation', async () => {
    let clock = 0;
    const shared = new IsolateShared<string>({ freshMs: 10, staleMs: 20, now: () => clock });
    shared.set('kept');
    clock = 15;
    const failing = held<string>();
    const p = shared.get(failing.compute);
    failing.fail(new Error('catalog unreachable'));
    await expect(p).rejects.toThrow('catalog unreachable');
    clock = 16;
    const older = held<string>();
    const q = shared.get(older.compute); // began at 16
    clock = 17;
    shared.set('written at 17'); // a rebuild ended a loss meanwhile
    older.finish('read at 16');
    expect(await q).toBe('read at 16');
    expect(await shared.get(() => Promise.reject(new Error('computed')))).toBe('written at 17');
  });
});

describe('the catalog-loss gate over it', () => {
  it("lets a write through on the record it has while another write's read of it is in flight, and refuses by the record it reads", async () => {
    let clock = 0;
    const reads: ((loss: CatalogLoss) => void)[] = [];
    const gate = new CatalogLossGate(
      () => new Promise<CatalogLoss>((r) => reads.push(r)),
      () => clock,
    );
    gate.update({ lost: {}, suspect: {} } as unknown as CatalogLoss);
    clock = REFRESH_MS; // stale: the next write reads the record
    const reading = gate.check('PUT', 'vault');
    expect(reads).toHaveLength(1);
    // Before: this write waited on the first one's read (a promise of another request: cancelled in workerd).
    expect(await settled(gate.check('PUT', 'vault'))).toBe(true);
    expect(reads).toHaveLength(1);
    reads[0]!({ lost: { vault: {} }, suspect: {} } as unknown as CatalogLoss);
    await expect(reading).rejects.toMatchObject({ code: 'InvalidBucketState' });
    await expect(gate.check('PUT', 'vault')).rejects.toMatchObject({ code: 'InvalidBucketState' });
    await expect(gate.check('GET', 'vault')).resolves.toBeUndefined();
  });
});
