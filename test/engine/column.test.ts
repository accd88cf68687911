/**
 * Column units (wide codes, k+m > 6) through the UnitStore, over memory backends behind the fault
 * wrapper and a subrequest probe: round trips at sizes around block, shard and unit boundaries,
 * whole and ranged; degraded reads with up to m shards lost or rotten (QuorumError beyond);
 * write quorum; partial and complete footers; repair byte for byte; and never more than 6
 * backend requests open at once, whatever the width.
 */
import { createHash } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { FaultyBackend, MemoryBackend } from '../../backends/index.ts';
import type { CodedUnit } from '../../worker/format/manifest.ts';
import { bucketPrefix, shardKey, unitPrefix } from '../../worker/format/shard-key.ts';
import { decodeFooter } from '../../worker/format/shard-file.ts';
import { shardLayout } from '../../worker/format/layout.ts';
import { COLUMN_READ_AHEAD, FAR_BACKEND_MS, FAR_READ_AHEAD } from '../../worker/engine/span-stream.ts';
import type { StoragePolicy } from '../../worker/engine/policy.ts';
import type { ShardReadError } from '../../worker/engine/shard-reader.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { rebuildShards } from '../../worker/engine/index.ts';
import { prng, randomBytes } from '../support/random.ts';
import { readBytes } from '../support/read-bytes.ts';
import { SubrequestProbe } from '../support/subrequest-probe.ts';
import { pinLatency } from '../support/pinned-latency.ts';

const B = 4096;

function policy(k: number, m: number): StoragePolicy {
  return { name: `ec-${k}-${m}`, codec: 'rs-cauchy-gf8', k, m, writeQuorum: k + 1, blockSize: B, small: { threshold: 0, mode: 'replicate', replicas: 3 } };
}

function setup(n: number, columnParityBytes = 3 * 3 * B) {
  const faulty = Array.from({ length: n }, (_, i) => new FaultyBackend(new MemoryBackend({ id: `c${i}`, domain: `z${i}` })));
  const probe = new SubrequestProbe();
  const bad: ShardReadError[] = [];
  const units = new UnitStore(
    faulty.map((f) => probe.wrap(f)),
    (_b, _k, _u, e) => bad.push(e),
    { columnParityBytes },
  );
  return { faulty, probe, bad, units };
}

function streamOf(bytes: Uint8Array, piece = 1500): ReadableStream<Uint8Array> {
  let off = 0;
  return new ReadableStream({
    pull(c) {
      if (off >= bytes.length) return c.close();
      c.enqueue(bytes.slice(off, off + piece));
      off += piece;
    },
  });
}

async function bytesOf(s: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return readBytes(s);
}

async function store(s: ReturnType<typeof setup>, p: StoragePolicy, data: Uint8Array, key = 'obj') {
  const plan = s.units.plan(data.length, p, false);
  const stored = await s.units.storeBody({
    bucket: 'bkt',
    key,
    body: streamOf(data),
    size: data.length,
    policy: p,
    plan,
    checksum: { algorithm: 'CRC32', expected: null },
  });
  if (stored.storage.kind !== 'coded') throw new Error('not coded');
  return { ...stored, units: stored.storage.units };
}

const read = async (s: ReturnType<typeof setup>, units: CodedUnit[], start: number, end: number) =>
  bytesOf(await s.units.open('bkt', 'obj', { kind: 'coded', units }, start, end));
const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');

describe('column units', () => {
  const rand = prng(31);

  it.each([
    [4, 3],
    [8, 3],
    [10, 4],
    [16, 4],
  ])('%i+%i: round-trips around block, shard and unit boundaries, whole and in ranges, within 6 open requests', async (k, m) => {
    const S = Math.floor((3 * 3 * B) / m / B) * B || B; // the shard length the plan picks
    for (const size of [1, B - 1, B + 1, k * B - 1, k * S, k * S + 1, Math.floor(3.5 * k * S)]) {
      const s = setup(k + m);
      const data = randomBytes(rand, size);
      const { units, md5: got } = await store(s, policy(k, m), data);
      expect(Buffer.from(got).toString('hex')).toBe(md5(data));
      expect(units.every((u) => u.layout === 'column' && u.missing.length === 0)).toBe(true);
      expect(units.length).toBe(Math.max(1, Math.ceil(size / (k * S))));
      expect(units.at(-1)!.md5, "the last unit carries the write's MD5").toBe(md5(data));
      expect(Buffer.compare(await read(s, units, 0, size - 1), data), `${k}+${m} size ${size}`).toBe(0);
      for (const [a, b] of [
        [0, 0],
        [size - 1, size - 1],
        [Math.floor(size / 3), Math.floor((2 * size) / 3)],
      ]) {
        expect(Buffer.compare(await read(s, units, a!, b!), data.subarray(a!, b! + 1)), `${k}+${m} size ${size} range ${a}-${b}`).toBe(0);
      }
      expect(s.probe.violations).toEqual([]);
      expect(s.probe.peak).toBeLessThanOrEqual(6);
    }
  });

  it('a healthy read streams the data shard it sends and the next COLUMN_READ_AHEAD at once, never a parity shard', async () => {
    const s = setup(11);
    const data = randomBytes(rand, 8 * 9 * B);
    const { units } = await store(s, policy(8, 3), data);
    s.faulty.forEach((f) => f.calls.splice(0));
    s.probe.peak = 0;
    expect(Buffer.compare(await read(s, units, 0, data.length - 1), data)).toBe(0);
    expect(s.probe.peak, 'the shard being sent and the ones read ahead (span-stream.ts)').toBe(1 + COLUMN_READ_AHEAD);
    const parity = units.flatMap((u) => u.placement.slice(8));
    expect(
      s.faulty.filter((f) => parity.includes(f.id) && !units.some((u) => u.placement.slice(0, 8).includes(f.id))).length,
      'placement puts parity on its own backends here',
    ).toBeGreaterThan(0);
    for (const u of units) {
      for (const id of u.placement.slice(8)) {
        expect(
          s.faulty.find((f) => f.id === id)!.calls.some((c) => c.op === 'get' && c.key.startsWith(unitPrefix('bkt', u.unitId))),
          `parity of ${u.unitId} on ${id}`,
        ).toBe(false);
      }
    }
  });

  it('over backends that answer slowly, a healthy read opens the next data shard one ahead; over fast ones it does not', async () => {
    for (const [ms, peak] of [
      [FAR_BACKEND_MS - 1, 1 + COLUMN_READ_AHEAD],
      [FAR_BACKEND_MS * 4, 1 + FAR_READ_AHEAD],
    ] as const) {
      const s = setup(11);
      const data = randomBytes(rand, 8 * 9 * B);
      const { units } = await store(s, policy(8, 3), data);
      // What the isolate's reads have measured (engine/backend-latency.ts), whatever a loaded machine takes.
      pinLatency(
        s.units.latency,
        s.faulty.map((f) => f.id),
        ms,
      );
      s.probe.peak = 0;
      expect(Buffer.compare(await read(s, units, 0, data.length - 1), data)).toBe(0);
      expect(s.probe.peak, `backends answering in ${ms} ms`).toBe(peak);
      expect(s.probe.violations).toEqual([]);
      // Every data shard read once, no parity: read ahead is the shard's own read, opened early.
      const gets = s.faulty.flatMap((f) => f.calls.filter((c) => c.op === 'get'));
      expect(gets.length).toBe(8 * units.length);
      // A data shard's backend down mid-read, streams ahead open or not: the same bytes, within 6 open requests.
      for (const down of [1, 5]) {
        s.faulty.find((f) => f.id === units[0]!.placement[down])!.goOffline();
        expect(Buffer.compare(await read(s, units, 0, data.length - 1), data), `shard ${down} down, ${ms} ms`).toBe(0);
        s.faulty.forEach((f) => f.goOnline());
      }
      expect(s.probe.violations).toEqual([]);
      expect(s.probe.peak).toBeLessThanOrEqual(6);
    }
  });

  it('reads through up to m lost backends and rotten blocks, reporting each shard once; m+1 lost is QuorumError', async () => {
    const s = setup(14);
    const data = randomBytes(rand, 10 * 9 * B + 333);
    const { units } = await store(s, policy(10, 4), data);
    const placement = units[0]!.placement;
    const at = (i: number) => s.faulty.find((f) => f.id === placement[i])!;
    at(0).goOffline();
    at(3).goOffline();
    at(7).flipBitsOnGet({ count: 1 });
    at(11).goOffline();
    expect(Buffer.compare(await read(s, units, 0, data.length - 1), data)).toBe(0);
    expect(Buffer.compare(await read(s, units, 5 * B + 7, 40 * B), data.subarray(5 * B + 7, 40 * B + 1))).toBe(0);
    // 11 (parity, offline) is found when the decoder tries it.
    expect([...new Set(s.bad.map((e) => `${e.shardIndex}:${e.reason}`))].sort()).toEqual(['0:unavailable', '11:unavailable', '3:unavailable', '7:corrupt']);
    expect(s.probe.violations).toEqual([]);
    at(12).goOffline();
    at(13).goOffline();
    await expect(read(s, units, 0, data.length - 1)).rejects.toMatchObject({ name: 'QuorumError' });
  });

  it('writes at quorum with a backend down (the shard is missing), and below quorum leaves nothing', async () => {
    const s = setup(11);
    const data = randomBytes(rand, 8 * 12 * B);
    const placed = (await store(s, policy(8, 3), data, 'probe')).units[0]!.placement;
    s.faulty.find((f) => f.id === placed[2])!.goOffline();
    const { units } = await store(s, policy(8, 3), data, 'probe');
    expect(units.every((u) => u.missing.join() === '2')).toBe(true);
    expect(Buffer.compare(await read(s, units, 0, data.length - 1), data)).toBe(0);
    s.faulty.find((f) => f.id === placed[9])!.goOffline();
    s.faulty.find((f) => f.id === placed[10])!.goOffline();
    const before = await Promise.all(s.faulty.map((f) => f.inner.list(bucketPrefix('bkt'))));
    await expect(store(s, policy(8, 3), data, 'probe')).rejects.toMatchObject({ name: 'QuorumError' });
    const after = await Promise.all(s.faulty.map((f) => f.inner.list(bucketPrefix('bkt'))));
    expect(after.map((p) => p.entries.length)).toEqual(before.map((p) => p.entries.length));
  });

  it('a short or long body is IncompleteBody and leaves no shard behind', async () => {
    const s = setup(11);
    const data = randomBytes(rand, 8 * 10 * B);
    const p = policy(8, 3);
    const short = s.units.storeBody({
      bucket: 'bkt',
      key: 'o',
      body: streamOf(data.subarray(1)),
      size: data.length,
      policy: p,
      plan: s.units.plan(data.length, p, false),
      checksum: null,
    });
    await expect(short).rejects.toMatchObject({ code: 'IncompleteBody' });
    const long = s.units.storeBody({
      bucket: 'bkt',
      key: 'o',
      body: streamOf(data),
      size: data.length - 1,
      policy: p,
      plan: s.units.plan(data.length - 1, p, false),
      checksum: null,
    });
    await expect(long).rejects.toMatchObject({ code: 'IncompleteBody' });
    for (const f of s.faulty) expect((await f.inner.list('')).entries).toEqual([]);
  });

  it('footers: data shards before the last carry partial ones, the others the complete one', async () => {
    const s = setup(11);
    const data = randomBytes(rand, 8 * 6 * B);
    const { units } = await store(s, policy(8, 3), data);
    expect(units.length).toBe(2);
    const u = units[1]!; // the last unit: its complete footers carry the write's MD5
    for (let i = 0; i < 11; i++) {
      const b = s.faulty.find((f) => f.id === u.placement[i])!.inner;
      const file = await bytesOf((await b.get(shardKey('bkt', u.unitId, i))).body);
      const layout = shardLayout(u, i);
      expect(file.length).toBe(layout.shardFileLen());
      const footer = decodeFooter(file.subarray(layout.footerOffset()), 11);
      expect(!!footer.partial, `shard ${i}`).toBe(i < 7);
      const digests = footer.shardDigests.map((d) => d.toString(16).padStart(16, '0'));
      for (let j = 0; j < 11; j++) expect(digests[j], `shard ${i} digest ${j}`).toBe(footer.partial && j > i ? '0000000000000000' : u.shardDigests[j]);
      if (!footer.partial) expect(Buffer.from(footer.md5).toString('hex')).toBe(md5(data));
    }
  });

  it('repair rebuilds lost shards (data, last data, parity) byte for byte within 6 open requests', async () => {
    const s = setup(14);
    const data = randomBytes(rand, 10 * 20 * B + 5);
    const { units } = await store(s, policy(10, 4), data);
    const u = units[0]!;
    const byId = new Map(s.faulty.map((f) => [f.id, s.probe.wrap(f)] as const));
    const lost = [1, 9, 12];
    const original = new Map<number, Uint8Array>();
    for (const i of lost) {
      const b = s.faulty.find((f) => f.id === u.placement[i])!.inner;
      original.set(i, await bytesOf((await b.get(shardKey('bkt', u.unitId, i))).body));
      await b.delete(shardKey('bkt', u.unitId, i));
    }
    const result = await rebuildShards('bkt', u, lost, byId);
    expect(result).toEqual({ repaired: lost, failed: [] });
    for (const i of lost) {
      const b = s.faulty.find((f) => f.id === u.placement[i])!.inner;
      expect(Buffer.compare(await bytesOf((await b.get(shardKey('bkt', u.unitId, i))).body), original.get(i)!), `shard ${i}`).toBe(0);
    }
    expect(s.probe.violations).toEqual([]);
  });
});
