/**
 * What a degraded read costs in backend requests (issue 23), counted on the real read paths
 * (UnitStore over memory backends behind the fault wrapper and the subrequest probe):
 * - a column unit (wide code) with one or two shards down, recorded or not, makes at most 2k
 *   GETs, whatever its size: each source is opened once for the rebuild (no rounds, no restarted
 *   pass), each healthy data shard at most once more for its own bytes; never more than 6
 *   requests open at once. The one exception, measured: the last data shard and the parity taken
 *   first both down, 2k+1 (column-rebuild.ts). With one data shard t down, exactly
 *   2k - min(k-1-t, m-1): later shards solved from the parities left over instead of read twice;
 *   when the unit is small enough for the rebuild to keep its later sources, t + 1 + k.
 *   A source failing mid-pass costs one more read;
 * - a single-row unit (a small object) makes k+1 GETs with one data shard down, k+2 with two,
 *   in the wide (column) and the narrow (striped) layouts alike, and a healthy one k;
 * - a degraded read that is cancelled mid-body gives back the coding budget it grew by and
 *   leaves no request open;
 * - a healthy column read streams the shard it sends and the next COLUMN_READ_AHEAD at once
 *   (one GET each, k in all), not one shard after the other.
 */
import { describe, expect, it } from 'vitest';
import { FaultyBackend, MemoryBackend } from '../../backends/index.ts';
import type { CodedUnit } from '../../worker/format/manifest.ts';
import type { StoragePolicy } from '../../worker/engine/policy.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { prng, randomBytes } from '../support/random.ts';
import { readBytes } from '../support/read-bytes.ts';
import { SubrequestProbe } from '../support/subrequest-probe.ts';
import { shardKey } from '../../worker/format/shard-key.ts';
import { COLUMN_READ_AHEAD } from '../../worker/engine/span-stream.ts';
import { pinLatency } from '../support/pinned-latency.ts';

const B = 4096;

function policy(k: number, m: number): StoragePolicy {
  return { name: `ec-${k}-${m}`, codec: 'rs-cauchy-gf8', k, m, writeQuorum: k + 1, blockSize: B, small: { threshold: 0, mode: 'replicate', replicas: 3 } };
}

/**
 * Column units of 16 rows per shard (columnParityBytes = m x 16 blocks), or of `rows`: a
 * degraded read's rebuild may hold columnParityBytes, so an object of fewer rows than the unit
 * has room to keep its later sources' columns.
 */
function setup(n: number, m: number, rows = 16) {
  const faulty = Array.from({ length: n }, (_, i) => new FaultyBackend(new MemoryBackend({ id: `c${i}`, domain: `z${i}` })));
  const probe = new SubrequestProbe();
  const units = new UnitStore(
    faulty.map((f) => probe.wrap(f)),
    () => {},
    { columnParityBytes: m * rows * B },
  );
  return { faulty, probe, units };
}
type Setup = ReturnType<typeof setup>;

function streamOf(bytes: Uint8Array): ReadableStream<Uint8Array> {
  let off = 0;
  return new ReadableStream({
    pull(c) {
      if (off >= bytes.length) return c.close();
      c.enqueue(bytes.slice(off, off + 5000));
      off += 5000;
    },
  });
}

async function store(s: Setup, p: StoragePolicy, data: Uint8Array): Promise<CodedUnit[]> {
  const plan = s.units.plan(data.length, p, false);
  const stored = await s.units.storeBody({ bucket: 'bkt', key: 'obj', body: streamOf(data), size: data.length, policy: p, plan, checksum: null });
  if (stored.storage.kind !== 'coded') throw new Error('not coded');
  return stored.storage.units;
}

/** GETs of shards of `unit` since the calls were last cleared, per shard index. */
function getsPerShard(s: Setup, unit: CodedUnit): number[] {
  return unit.placement.map(
    (id, i) => s.faulty.find((f) => f.id === id)!.calls.filter((c) => c.op === 'get' && c.key === shardKey('bkt', unit.unitId, i)).length,
  );
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const backendOf = (s: Setup, unit: CodedUnit, i: number) => s.faulty.find((f) => f.id === unit.placement[i])!;

describe('degraded reads: backend requests', () => {
  const rand = prng(23);

  /** An 8+3 object of 16 rows per shard, stored in units of `unitRows`, with shard 0's backend then down. */
  async function eightPlusThreeWithShard0Down(unitRows: number) {
    const k = 8,
      m = 3;
    const s = setup(k + m, m, unitRows);
    const data = randomBytes(rand, k * 16 * B);
    const [unit] = await store(s, policy(k, m), data);
    backendOf(s, unit!, 0).goOffline();
    return { s, data, unit };
  }

  /**
   * That object read whole with shard 3's bodies breaking after 9 framed blocks (with the
   * header) as well: the bytes must come back exact. The GETs per shard.
   */
  async function readWithShard3FailingAtRow9(unitRows: number): Promise<number[]> {
    const { s, data, unit } = await eightPlusThreeWithShard0Down(unitRows);
    backendOf(s, unit!, 3).truncateGets(unit!.headerLens[3]! + 9 * (8 + B) + 100, { mode: 'error', when: (c) => c.op === 'get' });
    s.faulty.forEach((f) => f.calls.splice(0));
    expect(Buffer.compare(await readBytes(await s.units.open('bkt', 'obj', { kind: 'coded', units: [unit!] }, 0, data.length - 1)), data)).toBe(0);
    return getsPerShard(s, unit!);
  }

  it.each([
    [8, 3],
    [10, 4],
    [12, 4],
    [16, 4],
  ])('%i+%i column unit, one or two shards down, unrecorded: at most 2k GETs, each shard opened at most twice', async (k, m) => {
    const s = setup(k + m, m);
    const data = randomBytes(rand, k * 16 * B + 5 * B + 77); // a full unit of 16 rows, then a short one
    const units = await store(s, policy(k, m), data);
    expect(units.length).toBe(2);
    // The parity a rebuild takes first is the one answering fastest: each case makes its downed
    // parity (if any) rank first, so the rebuild finds it down rather than avoiding it.
    // One data shard t down: the data shards after it the read has not opened are solved from
    // the parities left over instead of read twice (column-rebuild.ts, "solved by choice"); none
    // is kept, the unit being as large as a rebuild may hold (columnParityBytes).
    const one = (t: number) => 2 * k - Math.min(k - 1 - t, m - 1);
    const cases: [number[], number][] = [
      [[0], one(0)],
      [[Math.floor(k / 2)], one(Math.floor(k / 2))],
      [[k - 1], one(k - 1)],
      [[k + 1], k],
      [[1, k - 2], 2 * k], // two data shards: the second fails as a source of the first's rebuild
      [[0, k], 2 * k], // a data shard and the parity the rebuild takes first
      [[0, k - 1], 2 * k],
      [[0, 1], 2 * k], // the second is found by the read ahead (span-stream.ts) before the rebuild starts
      [[k - 1, k + 2], 2 * k + 1], // the last data shard and the first parity: 2k+1 (module note)
    ];
    for (const [down, most] of cases) {
      const u = units[0]!;
      for (let i = k; i < k + m; i++) for (let n = 0; n < 60; n++) s.units.latency.record(u.placement[i]!, down.includes(i) ? 1 : 10);
      down.forEach((i) => backendOf(s, u, i).goOffline());
      s.faulty.forEach((f) => f.calls.splice(0));
      s.probe.peak = 0;
      expect(
        Buffer.compare(await readBytes(await s.units.open('bkt', 'obj', { kind: 'coded', units }, 0, data.length - 1)), data),
        `${k}+${m} down ${down}`,
      ).toBe(0);
      for (const unit of units) {
        const gets = getsPerShard(s, unit);
        if (unit === u && down.some((i) => i < k))
          for (const i of down) expect(gets[i], `${k}+${m} down ${down}: shard ${i} was asked (and found down) or solved unasked`).toBeLessThanOrEqual(1);
        expect(sum(gets), `${k}+${m} down ${down}: GETs of ${unit === u ? 'the 16-row' : 'the short'} unit ${gets}`).toBeLessThanOrEqual(
          unit === u ? most : 2 * k,
        );
        if (unit === u && down.length === 1) expect(sum(gets), `${k}+${m} down ${down}: exactly, ${gets}`).toBe(most);
        expect(Math.max(...gets), 'no shard is opened more than twice (own bytes + rebuild source)').toBeLessThanOrEqual(2);
      }
      expect(s.probe.violations).toEqual([]);
      expect(s.probe.peak).toBeLessThanOrEqual(6);
      down.forEach((i) => backendOf(s, u, i).goOnline());
    }
  });

  it('a source failing mid-pass costs one more read, not the pass: its rows before come from its own read', async () => {
    const k = 8;
    // The rebuild of shard 0 has folded shard 3's rows 0-8 when it fails; the reader then reads
    // those rows itself.
    const gets = await readWithShard3FailingAtRow9(16);
    expect(gets[3], 'shard 3: once as a source, once for its rows 0-8').toBe(2);
    // Every parity is a source (shards 6 and 7 solved by choice, column-rebuild.ts): with no spare
    // parity left, shard 6 gives way, read as a source from row 9 (its rows 0-8 stay solved).
    expect(gets.slice(k), 'each parity once').toEqual([1, 1, 1]);
    expect([gets[6], gets[7]], 'shard 6: from row 9 as a source and for its own rows 9-15; shard 7 solved').toEqual([2, 0]);
    expect(sum(gets), `GETs ${gets}: 2k`).toBe(2 * k);
    expect(Math.max(...gets)).toBeLessThanOrEqual(2);
  });

  it.each([
    [8, 3],
    [10, 4],
  ])(
    '%i+%i column unit with room to keep its sources (a smaller object than the unit): one data shard t down costs t + 1 + k GETs, k+1 for the first',
    async (k, m) => {
      const s = setup(k + m, m, 64);
      const data = randomBytes(rand, k * 16 * B - 999); // 16 rows of a 64-row unit: the rebuild may hold 4 columns x m
      const [unit] = await store(s, policy(k, m), data);
      for (const t of [0, 1, Math.floor(k / 2), k - 1]) {
        backendOf(s, unit!, t).goOffline();
        s.faulty.forEach((f) => f.calls.splice(0));
        let held = 0;
        const grow = async (bytes: number) => {
          held = Math.max(held, bytes);
          return () => {};
        };
        expect(Buffer.compare(await readBytes(await s.units.open('bkt', 'obj', { kind: 'coded', units: [unit!] }, 0, data.length - 1, grow)), data)).toBe(0);
        const gets = getsPerShard(s, unit!);
        // The shards before t once for their own bytes and once as sources; t once (found down);
        // the later ones once, as sources kept for the caller; one parity.
        expect(sum(gets), `down ${t}: GETs ${gets}`).toBe(t + 1 + k);
        expect(gets.slice(t + 1, k), `down ${t}: the later shards read once`).toEqual(Array(k - 1 - t).fill(1));
        expect(held, 'never more than the unit writer holds').toBeLessThanOrEqual(m * 64 * B);
        backendOf(s, unit!, t).goOnline();
      }
    },
  );

  it('a kept source failing mid-pass: its rows before come from what was kept, the rest are solved; bytes exact', async () => {
    const k = 8;
    const gets = await readWithShard3FailingAtRow9(64);
    expect(gets[3], 'shard 3: once, as a source').toBe(1);
    expect(sum(gets), `GETs ${gets}: the down shard, k sources and the spare from row 9`).toBe(1 + k + 1);
  });

  it('a column unit whose lost shards are recorded missing is rebuilt in one pass of k sources, for every range', async () => {
    const k = 8,
      m = 3;
    const s = setup(k + m, m);
    const data = randomBytes(rand, k * 16 * B);
    const [unit] = await store(s, policy(k, m), data);
    const recorded: CodedUnit = { ...unit!, missing: [2, 5] };
    for (const [a, b] of [
      [0, data.length - 1],
      [2 * 16 * B + 100, 6 * 16 * B - 1],
      [5 * 16 * B + 7, 5 * 16 * B + 9],
    ] as const) {
      s.faulty.forEach((f) => f.calls.splice(0));
      expect(Buffer.compare(await readBytes(await s.units.open('bkt', 'obj', { kind: 'coded', units: [recorded] }, a, b)), data.subarray(a, b + 1))).toBe(0);
      const gets = getsPerShard(s, recorded);
      expect(gets[2] + gets[5], 'recorded missing: never asked for').toBe(0);
      expect(sum(gets)).toBeLessThanOrEqual(2 * k);
    }
  });

  it.each([
    [8, 3],
    [10, 4],
    [16, 4],
  ])('%i+%i single-row unit (a small object): k GETs healthy, k+1 with one data shard down, k+2 with two', async (k, m) => {
    const s = setup(k + m, m);
    const data = randomBytes(rand, k * 1000 + 3); // one row: 1001 bytes per data shard
    const [unit] = await store(s, policy(k, m), data);
    // A data shard and a parity shard down: the parity taken instead of the data shard may be the
    // down one (parity is ranked by measured latency), so k+2 at most, as with two down.
    for (const [down, most] of [
      [[], k],
      [[3], k + 1],
      [[0, k - 1], k + 2],
      [[k], k],
      [[1, k + 1], k + 2],
    ] as const) {
      down.forEach((i) => backendOf(s, unit!, i).goOffline());
      s.faulty.forEach((f) => f.calls.splice(0));
      s.probe.peak = 0;
      expect(Buffer.compare(await readBytes(await s.units.open('bkt', 'obj', { kind: 'coded', units: [unit!] }, 0, data.length - 1)), data)).toBe(0);
      expect(sum(getsPerShard(s, unit!)), `${k}+${m} down ${down}`).toBeLessThanOrEqual(most);
      if (down.length < 2 || down.every((i) => i < k)) expect(sum(getsPerShard(s, unit!)), `${k}+${m} down ${down}: exactly`).toBe(most);
      expect(s.probe.peak, 'one parallel round, within 6 open').toBe(Math.min(6, k));
      expect(s.probe.violations).toEqual([]);
      down.forEach((i) => backendOf(s, unit!, i).goOnline());
    }
  });

  it('4+2 single-row unit (striped): k+1 GETs with one data shard down, k+2 with two', async () => {
    const s = setup(6, 2);
    const data = randomBytes(rand, 4 * 1000);
    const [unit] = await store(s, policy(4, 2), data);
    for (const [down, most] of [
      [[], 4],
      [[1], 5],
      [[0, 3], 6],
    ] as const) {
      down.forEach((i) => backendOf(s, unit!, i).goOffline());
      s.faulty.forEach((f) => f.calls.splice(0));
      expect(Buffer.compare(await readBytes(await s.units.open('bkt', 'obj', { kind: 'coded', units: [unit!] }, 0, data.length - 1)), data)).toBe(0);
      expect(sum(getsPerShard(s, unit!)), `down ${down}`).toBe(most);
      down.forEach((i) => backendOf(s, unit!, i).goOnline());
    }
  });

  it.each([
    ['its rows', 16],
    ['its rows and the later sources it keeps', 64],
  ])('a degraded read cancelled mid-body gives back the budget it grew by (%s) and leaves no request open', async (_, unitRows) => {
    const { s, data, unit } = await eightPlusThreeWithShard0Down(unitRows);
    let held = 0,
      grants = 0;
    const grow = async (bytes: number) => {
      held += bytes;
      grants++;
      let given = false;
      return () => {
        if (!given) held -= bytes;
        given = true;
      };
    };
    const body = await s.units.open('bkt', 'obj', { kind: 'coded', units: [unit!] }, 0, data.length - 1, grow);
    const reader = body.getReader();
    expect((await reader.read()).done).toBe(false);
    expect(grants, 'the rebuild of shard 0 asked for its rows').toBe(1);
    // Kept: two syndromes (the parity read and the spare) and the seven later sources, a column each.
    expect(held).toBeGreaterThanOrEqual((unitRows === 64 ? 9 : 1) * 16 * B);
    await reader.cancel();
    expect(held, 'given back on cancel').toBe(0);
    await new Promise((r) => setTimeout(r, 0));
    expect(s.probe.open, 'no request left open').toBe(0);
  });

  it.each([
    [8, 3],
    [16, 4],
  ])('%i+%i healthy column read: the shard it sends and the next ones stream at once, k GETs', async (k, m) => {
    const s = setup(k + m, m);
    const data = randomBytes(rand, k * 16 * B);
    const [unit] = await store(s, policy(k, m), data);
    // The backends answer a little late, so the streams overlap as they would on a network; the
    // isolate has measured them at that (a loaded machine's slower answers would make them far).
    s.faulty.forEach((f) => f.delayWhen(2, (c) => c.op === 'get'));
    pinLatency(
      s.units.latency,
      s.faulty.map((f) => f.id),
      2,
    );
    s.faulty.forEach((f) => f.calls.splice(0));
    s.probe.peak = 0;
    expect(Buffer.compare(await readBytes(await s.units.open('bkt', 'obj', { kind: 'coded', units: [unit!] }, 0, data.length - 1)), data)).toBe(0);
    expect(getsPerShard(s, unit!), 'each data shard asked once, no parity').toEqual([...Array(k).fill(1), ...Array(m).fill(0)]);
    expect(s.probe.peak, 'the shard being sent and the ones read ahead').toBe(1 + COLUMN_READ_AHEAD);
    // A range inside one shard opens that shard only.
    s.faulty.forEach((f) => f.calls.splice(0));
    s.probe.peak = 0;
    expect(
      Buffer.compare(
        await readBytes(await s.units.open('bkt', 'obj', { kind: 'coded', units: [unit!] }, 3 * 16 * B + 5, 4 * 16 * B - 1)),
        data.subarray(3 * 16 * B + 5, 4 * 16 * B),
      ),
    ).toBe(0);
    expect(sum(getsPerShard(s, unit!))).toBe(1);
    expect(s.probe.peak).toBe(1);
  });
});
