/**
 * Tenants' shares of the coding budget (issue 37): the review's twelve stalled uploads of one
 * write-only key held 46 of 48 MiB and another tenant's PUT waited 18 s. Now one tenant holds at
 * most its share; its further requests wait for its own leases while other tenants' pass them;
 * and a stalled body whose request holds budget others wait for is cut after the stall limit, not
 * the idle limit. The clock is driven (fake timers), nothing sleeps.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CodingBudget, type BudgetHolder, type BudgetLease } from '../../worker/engine/coding-budget.ts';
import { verifyingBody } from '../../worker/auth/body-stream.ts';
import { FaultyBackend, MemoryBackend } from '../../backends/index.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { readBytes } from '../support/read-bytes.ts';

const of = (tenant?: string): BudgetHolder => ({ label: 'PutObject', ...(tenant === undefined ? {} : { tenant }) });
/** Settles the promise callbacks now queued (no timers involved). */
const settle = () => new Promise<void>((r) => queueMicrotask(() => queueMicrotask(r)));

describe('tenant shares of the coding budget', () => {
  it("a tenant at its share waits for its own leases; another tenant's request passes it", async () => {
    const budget = new CodingBudget(48, 60_000, 24);
    const stalls: BudgetLease[] = [];
    for (let i = 0; i < 6; i++) stalls.push(await budget.acquire(4, of('writer'))); // 24: the writer's share
    const granted: string[] = [];
    const more = Array.from({ length: 6 }, (_, i) => budget.acquire(4, of('writer')).then((l) => (granted.push(`writer ${i}`), l)));
    await settle();
    expect(budget.snapshot()).toMatchObject({ heldBytes: 24, waiters: 6 });
    const other = await budget.acquire(20, of('reader')); // passes the writer's six queued requests
    expect(budget.snapshot()).toMatchObject({ heldBytes: 44, waiters: 6 });
    expect(granted).toEqual([]);
    stalls[0]!.release(); // the writer's own lease ends: one of its waiters goes on
    await settle();
    expect(granted).toEqual(['writer 0']);
    other.release();
    for (const l of stalls.slice(1)) l.release();
    for (const l of await Promise.all(more)) l.release();
    expect(budget.snapshot()).toMatchObject({ heldBytes: 0, holders: 0, waiters: 0 });
  });

  it('a tenant holding nothing may run one request larger than its share; holders without a tenant are not limited', async () => {
    const budget = new CodingBudget(48, 60_000, 24);
    const big = await budget.acquire(30, of('writer'));
    let second = false;
    const next = budget.acquire(4, of('writer')).then((l) => ((second = true), l));
    await settle();
    expect(second).toBe(false);
    const job = await budget.acquire(16, of()); // a job: no share
    expect(budget.snapshot().heldBytes).toBe(46);
    big.release();
    (await next).release();
    job.release();
  });

  it('without shares (the default) one holder may take it all, in arrival order as before', async () => {
    const budget = new CodingBudget(48, 60_000);
    const leases = [];
    for (let i = 0; i < 12; i++) leases.push(await budget.acquire(4, of('writer')));
    expect(budget.snapshot().heldBytes).toBe(48);
    for (const l of leases) l.release();
  });

  it('a gateway of one key (and no anonymous access) keeps the whole budget for it; two keys, or anonymous access, get shares', () => {
    const backends = [{ id: 'm', kind: 'memory', domain: 'z' }];
    const key = (id: string) => ({ accessKeyId: id, secretAccessKey: `${id}-secret-0123456789` });
    const share = (o: object) =>
      engineSettings(parseConfig({ backends, policies: { one: { codec: 'replicate', replicas: 1 } }, defaultPolicy: 'one', ...o })).codingBudget!.tenantShare;
    expect(share({ credentials: [key('a')] })).toBe(1);
    expect(share({ credentials: [key('a'), key('b')] })).toBe(0.5);
    expect(share({ credentials: [key('a')], allowAnonymous: true })).toBe(0.5);
    expect(share({ credentials: [key('a'), key('b')], codingBudget: { tenantShare: 0.25 } })).toBe(0.25);
  });
});

describe('a stalled body holding what others wait for', () => {
  afterEach(() => void vi.useRealTimers());

  const stalledBody = (contended: () => boolean) => {
    const raw = new ReadableStream<Uint8Array>({ pull: () => new Promise(() => {}) }); // sends nothing, ever
    return verifyingBody(
      raw,
      (piece) => [piece],
      () => {},
      20_000,
      { ms: 5_000, contended },
    )
      .getReader()
      .read();
  };

  it('is cut after the stall limit while others wait, after the idle limit otherwise', async () => {
    vi.useFakeTimers();
    let contended = false;
    let outcome: unknown = 'pending';
    stalledBody(() => contended).then(
      () => (outcome = 'read'),
      (err) => (outcome = err),
    );
    await vi.advanceTimersByTimeAsync(10_000);
    expect(outcome).toBe('pending'); // nobody waits: the idle limit still applies
    contended = true;
    await vi.advanceTimersByTimeAsync(5_000);
    expect(outcome).toMatchObject({ code: 'RequestTimeout', message: expect.stringContaining('while other requests waited') });

    let alone: unknown = 'pending';
    stalledBody(() => false).then(
      () => (alone = 'read'),
      (err) => (alone = err),
    );
    await vi.advanceTimersByTimeAsync(19_000);
    expect(alone).toBe('pending');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(alone).toMatchObject({ code: 'RequestTimeout', message: 'The request body sent nothing for 20 s.' });
  });
});

describe('a degraded read growing its lease past its tenant share', () => {
  it('gets the rebuilt rows it needs instead of waiting for its own lease (no SlowDown)', async () => {
    // A wide code (8+3): its units are column units, whose degraded reads grow their lease.
    const faulty = Array.from({ length: 11 }, (_, i) => new FaultyBackend(new MemoryBackend({ id: `m${i}`, domain: `z${i}` })));
    const config = parseConfig({
      backends: faulty.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
      policies: { ec: { k: 8, m: 3, blockSize: 4096 } },
      defaultPolicy: 'ec',
    });
    // A share far below one read: every grow of a degraded column read is beyond it.
    const settings = { ...engineSettings(config), codingBudget: { bytes: 64 << 20, maxWaitMs: 200, tenantShare: 0.001 } };
    const holder: BudgetHolder = { label: 'GetObject', tenant: 'reader' };
    const catalog = localCatalog();
    const store = new EcStore({ catalog, units: new UnitStore(faulty, undefined, { columnParityBytes: 3 * 3 * 4096 }), settings, holder: () => holder });
    await store.createBucket('b', { region: 'us-east-1' });
    const data = new Uint8Array(300_000).map((_, i) => (i * 31) & 255);
    await store.putObject('b', 'k', new Response(data).body!, { contentLength: data.length, metadata: { user: {} }, checksum: null, conditions: {} });
    const m = (await catalog.getManifest('b', 'k'))!;
    expect(m.storage.kind === 'coded' && m.storage.units[0]!.layout).toBe('column');
    faulty.find((f) => f.id === (m.storage as { units: { placement: string[] }[] }).units[0]!.placement[0])!.goOffline(); // a data shard: the read rebuilds rows
    const got = await readBytes((await store.getObject('b', 'k', { conditions: {} })).body);
    expect(Buffer.compare(got, data)).toBe(0);
    expect(store.codingBudget()).toMatchObject({ heldBytes: 0, waiters: 0 });
  });
});
