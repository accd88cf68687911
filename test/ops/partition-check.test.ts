// The status's partitions check (worker/ops/checks.ts partitionCheck): catalog partitions against
// the split thresholds (config `partitions`) and the 10 GB a Durable Object holds.
import { describe, expect, it } from 'vitest';
import { DURABLE_OBJECT_BYTES, partitionCheck } from '../../worker/ops/checks.ts';
import { partitionsCell } from '../../cli/commands/status.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { manifest } from '../catalog/fixtures.ts';

const T = { autoSplit: true, splitRows: 1000, splitBytes: 1_000_000, warnFraction: 0.8 };
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
