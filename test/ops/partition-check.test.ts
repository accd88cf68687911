// The status's partitions check (worker/ops/checks.ts partitionCheck): catalog partitions against
// the split thresholds (config `partitions`) and the 10 GB a Durable Object holds.
import { describe, expect, it } from 'vitest';
import { DURABLE_OBJECT_BYTES, partitionCheck } from '../../worker/ops/checks.ts';
import { partitionsCell } from '../../cli/commands/status.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { manifest } from '../catalog/fixtures.ts';
import { RequestRate } from '../../worker/model/request-rate.ts';

const T = { autoSplit: true, splitRows: 1000, splitBytes: 1_000_000, splitRequestRate: 100, warnFraction: 0.8, autoMerge: true, mergeAfterDays: 3 };
const part = (versions: number, databaseBytes = 1000) => ({ versions, databaseBytes });

describe('the partitions check', () => {
  it('is ok under the warning fraction, and counts partitions and split buckets', () => {
    const c = partitionCheck(
      [
        { bucket: 'a', partitions: [part(10), part(20)] },
        { bucket: 'b', partitions: [part(799)] },
      ],
      T,
      true,
    );
    expect(c).toEqual({ name: 'partitions', state: 'ok', detail: '3 catalog partitions in 2 buckets (1 split), each under 80% of the split thresholds' });
  });

  it('warns past the fraction of either threshold, naming buckets only when signed', () => {
    const buckets = [
      { bucket: 'rows', partitions: [part(1000)] },
      { bucket: 'bytes', partitions: [part(1, 850_000)] },
      { bucket: 'fine', partitions: [part(1)] },
    ];
    const signed = partitionCheck(buckets, T, true);
    expect(signed).toMatchObject({ state: 'warning', detail: expect.stringContaining('1 over a split threshold, 1 past 80% of one (rows, bytes)') });
    expect(signed.action).toMatch(/cron splits/);
    expect(partitionCheck(buckets, T, false).detail).not.toMatch(/rows|bytes\)/);
    expect(partitionCheck(buckets, { ...T, autoSplit: false }, true).action).toMatch(/automatic splits are off/);
  });

  it('counts a busy partition against the request rate threshold', () => {
    const busy = [{ bucket: 'busy', partitions: [{ ...part(1), requestsPerSecond: 85 }] }];
    expect(partitionCheck(busy, T, true)).toMatchObject({ state: 'warning', detail: expect.stringContaining('1 past 80% of one (busy)') });
    expect(partitionCheck([{ bucket: 'calm', partitions: [{ ...part(1), requestsPerSecond: 5 }] }], T, true).state).toBe('ok');
  });

  it("is critical near the platform's 10 GB, whatever the thresholds", () => {
    const c = partitionCheck([{ bucket: 'huge', partitions: [part(1, 0.85 * DURABLE_OBJECT_BYTES)] }], { ...T, splitBytes: 100 * DURABLE_OBJECT_BYTES }, true);
    expect(c).toMatchObject({ state: 'critical', detail: expect.stringContaining('(huge)') });
  });
});

describe("shardgate status's partitions column", () => {
  it("shows a split bucket's partitions from its health: how many, the largest, a split in progress", async () => {
    const c = localCatalog({}, undefined, { split: false });
    await c.insertBucket('cells', 'auto');
    for (let i = 0; i < 9; i++) await c.commitManifest('cells', `k${i}`, manifest('cells', `k${i}`), {});
    expect(partitionsCell((await c.bucketHealth('cells', new Date())).partitions)).toMatch(/^1 \(largest 9 versions, /);
    await c.splitPartition('cells', 'k0', 'k3');
    const cell = partitionsCell((await c.bucketHealth('cells', new Date())).partitions);
    expect(cell).toMatch(/^2 \(largest 6 versions, [\d.]+ \w+\)$/);
    expect(partitionsCell(undefined)).toBe('-');
  });
});

describe("a partition's request rate (model/request-rate.ts)", () => {
  it('is the mean over the last 5 minutes, idle time included; old calls fall out of the window', () => {
    const r = new RequestRate();
    const t0 = 1_000_000_000;
    for (let i = 0; i < 300; i++) r.count(t0 + i * 1000); // one a second for 5 minutes
    expect(r.perSecond(t0 + 299_000)).toBeCloseTo(1, 1);
    expect(r.perSecond(t0 + 299_000 + 150_000)).toBeCloseTo(0.5, 1); // half the window idle since
    expect(r.perSecond(t0 + 299_000 + 310_000)).toBe(0);
    for (let i = 0; i < 600; i++) r.count(t0 + 700_000); // a burst of 600 in one instant: 2 a second over the window
    expect(r.perSecond(t0 + 700_000)).toBe(2);
  });

  it("halves the recent key-addressed calls inside the partition's range; too few keys give none", () => {
    const r = new RequestRate();
    for (let i = 0; i < 10; i++) r.count(0, `k${i}`);
    expect(r.hotMedian('', null)).toBeNull();
    for (let i = 0; i < 1000; i++) r.count(0, `k${String(i % 100).padStart(2, '0')}`); // only the last 512 are kept
    const m = r.hotMedian('', null)!;
    expect(m >= 'k40' && m <= 'k60', m).toBe(true);
    expect(r.hotMedian('k97', null)).toBeNull(); // about 10 calls of the sample fall above k97: too few
    expect(r.hotMedian('', 'k50')! < 'k50').toBe(true);
  });
});
