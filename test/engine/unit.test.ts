/**
 * The EC data path on its own: writeUnit then readUnit over memory backends behind the fault
 * wrapper. Sizes around stripe boundaries, ranges, each single and double backend loss, bit
 * flips and truncation (rebuilt, reported), more than m losses (QuorumError, never wrong bytes),
 * write quorum, and the replica codec.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { FaultyBackend, MemoryBackend } from '../../backends/index.ts';
import { putBodyStream } from '../../backends/streams.ts';
import type { Backend } from '../../backends/types.ts';
import { decodeFooter, decodeHeader } from '../../worker/format/shard-file.ts';
import { UnitLayout } from '../../worker/format/layout.ts';
import type { CodedUnit } from '../../worker/format/manifest.ts';
import { shardKey, unitPrefix } from '../../worker/format/shard-key.ts';
import { readUnit } from '../../worker/engine/unit-reader.ts';
import { QuorumError, writeUnit } from '../../worker/engine/unit-writer.ts';
import { BodyFeed } from '../../worker/engine/body-feed.ts';
import { rebuildShards } from '../../worker/engine/index.ts';
import { triageTargets } from '../../worker/upkeep/repair.ts';
import type { ShardReadError } from '../../worker/engine/shard-reader.ts';
import { createHash } from 'node:crypto';
import { BackendLatency } from '../../worker/engine/backend-latency.ts';
import { prng, randomBytes } from '../support/random.ts';

const BLOCK = 4096;

function cluster(n: number) {
  const faulty = Array.from({ length: n }, (_, i) => new FaultyBackend(new MemoryBackend({ id: `b${i}`, domain: `d${i}` })));
  return { faulty, map: new Map<string, Backend>(faulty.map((f) => [f.id, f])) };
}

function streamOf(bytes: Uint8Array, piece = 1000): ReadableStream<Uint8Array> {
  let off = 0;
  return new ReadableStream({
    pull(c) {
      if (off >= bytes.length) return c.close();
      c.enqueue(bytes.slice(off, off + piece));
      off += piece;
    },
  });
}

async function readAll(s: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const p of s as unknown as AsyncIterable<Uint8Array>) parts.push(p.slice()); // chunks are valid until the next read
  return new Uint8Array(Buffer.concat(parts));
}

async function put(backends: Backend[], data: Uint8Array, opts: { k?: number; m?: number; quorum?: number; codec?: 'replica'; unitId?: string } = {}) {
  const k = opts.k ?? 4,
    m = opts.m ?? 2;
  return writeUnit({
    bucket: 'bkt',
    key: 'obj',
    unitId: opts.unitId ?? 'u1',
    codec: opts.codec ?? 'rs-cauchy-gf8',
    k,
    m,
    blockSize: BLOCK,
    writeQuorum: opts.quorum ?? k + 1,
    backends,
    feed: new BodyFeed(streamOf(data), null, data.length),
    size: data.length,
  });
}

/** What reads have learned of backend speed; fresh per test (backend ids repeat across tests). */
let latency = new BackendLatency();

async function get(unit: CodedUnit, map: Map<string, Backend>, start = 0, end = unit.size - 1, bad: ShardReadError[] = [], hedgeMs?: number) {
  return readAll(await readUnit({ bucket: 'bkt', unit, backends: map, start, end, onUnhealthy: (e) => bad.push(e), hedgeMs, latency }));
}

describe('writeUnit / readUnit', () => {
  const rand = prng(77);
  beforeEach(() => void (latency = new BackendLatency()));

  it('round-trips sizes around stripe boundaries, whole and in ranges', async () => {
    for (const size of [1, 100, 4 * BLOCK - 1, 4 * BLOCK, 4 * BLOCK + 1, 3 * 4 * BLOCK + 5000]) {
      const { faulty, map } = cluster(6);
      const data = randomBytes(rand, size);
      const { unit } = await put(faulty, data);
      expect(unit.md5).toBe(createHash('md5').update(data).digest('hex'));
      expect(unit.missing).toEqual([]);
      expect(Buffer.compare(await get(unit, map), data), `size ${size}`).toBe(0);
      for (const [a, b] of [
        [0, 0],
        [size - 1, size - 1],
        [Math.floor(size / 3), Math.floor((2 * size) / 3)],
      ]) {
        expect(Buffer.compare(await get(unit, map, a!, b!), data.subarray(a!, b! + 1)), `size ${size} range ${a}-${b}`).toBe(0);
      }
    }
  });

  it('a healthy read touches only data shards, and only those the range needs', async () => {
    const { faulty, map } = cluster(6);
    const data = randomBytes(rand, 4 * BLOCK * 2);
    const { unit } = await put(faulty, data);
    faulty.forEach((f) => f.calls.splice(0));
    await get(unit, map, 10, 20); // inside shard 0 of stripe 0
    expect(faulty.map((f) => f.calls.filter((c) => c.op === 'get').length)).toEqual([1, 0, 0, 0, 0, 0]);
    faulty.forEach((f) => f.calls.splice(0));
    await get(unit, map);
    expect(faulty.map((f) => f.calls.filter((c) => c.op === 'get').length)).toEqual([1, 1, 1, 1, 0, 0]);
  });

  it("a degraded read keeps the healthy data shards' reads and adds one parity shard: k+1 requests", async () => {
    const { faulty, map } = cluster(6);
    const data = randomBytes(rand, 4 * BLOCK * 5);
    const { unit } = await put(faulty, data);
    faulty.forEach((f) => f.calls.splice(0));
    faulty[1]!.goOffline();
    expect(Buffer.compare(await get(unit, map), data)).toBe(0);
    expect(faulty.map((f) => f.calls.filter((c) => c.op === 'get').length)).toEqual([1, 1, 1, 1, 1, 0]);
    faulty[1]!.goOnline();
    // Rot found in a later stripe: the switch happens mid-read, the other data reads go on.
    faulty[2]!.flipBitsOnGet({ count: 1 });
    faulty.forEach((f) => f.calls.splice(0));
    expect(Buffer.compare(await get(unit, map), data)).toBe(0);
    const gets = faulty.map((f) => f.calls.filter((c) => c.op === 'get').length);
    expect(gets.slice(0, 4)).toEqual([1, 1, 1, 1]);
    expect(gets[4]! + gets[5]!, 'one parity shard (whichever answers fastest)').toBe(1);
  });

  it('reads through every single and double backend loss, and reports the lost shards', async () => {
    const { faulty, map } = cluster(6);
    const data = randomBytes(rand, 4 * BLOCK * 3 + 777);
    const { unit } = await put(faulty, data);
    for (let a = 0; a < 6; a++) {
      for (let b = a; b < 6; b++) {
        faulty[a]!.goOffline();
        faulty[b]!.goOffline();
        const bad: ShardReadError[] = [];
        expect(Buffer.compare(await get(unit, map, 0, data.length - 1, bad), data), `down ${a},${b}`).toBe(0);
        for (const i of new Set([a, b])) if (i < 4) expect(bad.map((e) => e.shardIndex)).toContain(i);
        faulty[a]!.goOnline();
        faulty[b]!.goOnline();
      }
    }
  });

  it('rebuilds around flipped bits and truncated shards, and calls them corrupt', async () => {
    const { faulty, map } = cluster(6);
    const data = randomBytes(rand, 4 * BLOCK * 2 + 99);
    const { unit } = await put(faulty, data);
    faulty[1]!.flipBitsOnGet({ count: 1 });
    faulty[2]!.truncateGets(100);
    const bad: ShardReadError[] = [];
    expect(Buffer.compare(await get(unit, map, 0, data.length - 1, bad), data)).toBe(0);
    expect(bad.map((e) => [e.shardIndex, e.reason]).sort()).toEqual([
      [1, 'corrupt'],
      [2, 'corrupt'],
    ]);
  });

  it('refuses with QuorumError when more than m shards are gone, never returning wrong bytes', async () => {
    const { faulty, map } = cluster(6);
    const data = randomBytes(rand, 50_000);
    const { unit } = await put(faulty, data);
    [0, 3, 5].forEach((i) => faulty[i]!.goOffline());
    await expect(get(unit, map)).rejects.toBeInstanceOf(QuorumError);
    faulty[5]!.goOnline();
    faulty[4]!.flipBitsOnGet({ count: 3 });
    await expect(get(unit, map)).rejects.toBeInstanceOf(QuorumError);
  });

  it('meets the write quorum with one backend down, and fails below it leaving no shards', async () => {
    const { faulty, map } = cluster(6);
    const data = randomBytes(rand, 30_000);
    faulty[2]!.goOffline();
    const { unit } = await put(faulty, data);
    expect(unit.missing).toEqual([2]);
    expect(Buffer.compare(await get(unit, map), data)).toBe(0);
    faulty[4]!.goOffline();
    await expect(put(faulty, data, { unitId: 'u2' })).rejects.toBeInstanceOf(QuorumError);
    faulty[2]!.goOnline();
    faulty[4]!.goOnline();
    for (const f of faulty) expect((await f.list(unitPrefix('bkt', 'u2'))).entries).toEqual([]);
    expect(Buffer.compare(await get(unit, map), data)).toBe(0);
  });

  it('fails a body shorter or longer than declared with IncompleteBody and stores nothing', async () => {
    const { faulty } = cluster(6);
    const data = randomBytes(rand, 20_000);
    const short = writeUnit({
      bucket: 'bkt',
      key: 'obj',
      unitId: 'u2',
      codec: 'rs-cauchy-gf8',
      k: 4,
      m: 2,
      blockSize: BLOCK,
      writeQuorum: 5,
      backends: faulty,
      feed: new BodyFeed(streamOf(data.subarray(0, 19_000)), null, 20_000),
      size: 20_000,
    });
    await expect(short).rejects.toMatchObject({ code: 'IncompleteBody' });
    const long = writeUnit({
      bucket: 'bkt',
      key: 'obj',
      unitId: 'u3',
      codec: 'rs-cauchy-gf8',
      k: 4,
      m: 2,
      blockSize: BLOCK,
      writeQuorum: 5,
      backends: faulty,
      feed: new BodyFeed(streamOf(data), null, 19_000),
      size: 19_000,
    });
    await expect(long).rejects.toMatchObject({ code: 'IncompleteBody' });
    for (const f of faulty) expect((await f.list('')).entries).toEqual([]);
  });

  it('writes self-describing shards: header, block checksums and footer decode', async () => {
    const { faulty } = cluster(6);
    const data = randomBytes(rand, 4 * BLOCK + 10);
    const { unit } = await put(faulty, data);
    for (let i = 0; i < 6; i++) {
      const blob = await readAll((await faulty[i]!.get(shardKey('bkt', 'u1', i))).body);
      const header = decodeHeader(blob);
      expect(header).toMatchObject({ bucket: 'bkt', key: 'obj', unitId: 'u1', k: 4, m: 2, shardIndex: i, size: data.length });
      const layout = new UnitLayout(data.length, 4, 2, BLOCK, unit.headerLens[i]!);
      expect(blob.length).toBe(layout.shardFileLen());
      const footer = decodeFooter(blob.subarray(layout.footerOffset()), 6);
      expect(Buffer.from(footer.md5).toString('hex')).toBe(unit.md5);
      expect(footer.shardDigests.map((d) => d.toString(16).padStart(16, '0'))).toEqual(unit.shardDigests);
    }
  });

  it('replica codec: every shard is the data and any one serves a read', async () => {
    const { faulty, map } = cluster(3);
    const data = randomBytes(rand, 3 * BLOCK + 5);
    const { unit } = await put(faulty, data, { k: 1, m: 2, quorum: 2, codec: 'replica' });
    faulty[0]!.goOffline();
    faulty[1]!.flipBitsOnGet({ count: 1 });
    expect(Buffer.compare(await get(unit, map, 7, data.length - 1), data.subarray(7))).toBe(0);
  });

  it('repair rewrites lost and rotten shards byte for byte, from any k good ones', async () => {
    const cases = [
      { codec: undefined, k: 4, m: 2, lost: [1, 4], flip: null },
      { codec: undefined, k: 4, m: 2, lost: [1], flip: 0 }, // a source going bad mid-repair is skipped
      { codec: 'replica' as const, k: 1, m: 2, lost: [0], flip: 1 },
    ];
    for (const { codec, k, m, lost, flip } of cases) {
      const { faulty, map } = cluster(k + m);
      const data = randomBytes(rand, 4 * BLOCK * 2 + 321);
      const { unit } = await put(faulty, data, { k, m, quorum: k, codec });
      const original = await Promise.all(faulty.map(async (f, i) => readAll((await f.get(shardKey('bkt', 'u1', i))).body)));
      await faulty[lost[0]!]!.inner.delete(shardKey('bkt', 'u1', lost[0]!));
      if (lost[1] !== undefined) {
        const rotten = new Uint8Array(original[lost[1]]!); // a copy (Buffer#slice would be a view)
        rotten[rotten.length >> 1]! ^= 0x40;
        await faulty[lost[1]]!.inner.put(shardKey('bkt', 'u1', lost[1]), rotten, rotten.length);
      }
      if (flip !== null) faulty[flip]!.flipBitsOnGet({ count: 1 });
      const result = await rebuildShards('bkt', unit, lost, map);
      expect(result.repaired.sort()).toEqual(lost);
      faulty.forEach((f) => f.heal());
      for (const i of lost)
        expect(Buffer.compare(await readAll((await faulty[i]!.get(shardKey('bkt', 'u1', i))).body), original[i]!), `${codec} shard ${i}`).toBe(0);
    }
  });

  it('a repair that finds fewer than k readable shards fails before it opens any upload', async () => {
    const { faulty, map } = cluster(6);
    const { unit } = await put(faulty, randomBytes(rand, 4 * BLOCK * 2 + 7));
    for (const i of [1, 2]) await faulty[i]!.inner.delete(shardKey('bkt', unit.unitId, i));
    faulty[3]!.goOffline(); // 3 of 6 readable, 4 needed
    const putsBefore = faulty.map((f) => f.calls.filter((c) => c.op === 'put').length);
    await expect(rebuildShards('bkt', unit, [1, 2], map)).rejects.toThrow(/only 3 of 6 shards .* are readable; 4 needed/);
    // No upload was started and aborted mid-body (workerd logs each such abort as an uncaught rejection).
    expect(faulty.map((f) => f.calls.filter((c) => c.op === 'put').length)).toEqual(putsBefore);
  });

  it('repair triage: an unreachable shard that is back intact is left alone; one still unreachable waits', async () => {
    const { faulty, map } = cluster(6);
    const { unit } = await put(faulty, randomBytes(rand, 4 * BLOCK * 2 + 99));
    faulty[1]!.goOffline();
    await faulty[2]!.delete(shardKey('bkt', unit.unitId, 2));
    expect(await triageTargets('bkt', unit, [0, 1, 2], true, map)).toEqual({ now: [2], later: [1] });
    expect(await triageTargets('bkt', unit, [0, 2], false, map), 'reported rotten: rewritten even at full length').toEqual({ now: [0, 2], later: [] });
    faulty[1]!.goOnline();
    expect(await triageTargets('bkt', unit, [1], true, map)).toEqual({ now: [], later: [] });
  });

  it('a stale or misdirected shard (bytes of another unit under this key) is caught and routed around', async () => {
    const { faulty, map } = cluster(6);
    const a = randomBytes(rand, 4 * BLOCK + 50),
      b = randomBytes(rand, 4 * BLOCK + 50);
    const { unit } = await put(faulty, a, { unitId: 'u1' });
    await put(faulty, b, { unitId: 'u2' });
    const other = await readAll((await faulty[0]!.get(shardKey('bkt', 'u2', 0))).body);
    await faulty[0]!.put(shardKey('bkt', 'u1', 0), other, other.length);
    const bad: ShardReadError[] = [];
    expect(Buffer.compare(await get(unit, map, 0, a.length - 1, bad), a)).toBe(0);
    expect(bad.map((e) => [e.shardIndex, e.reason])).toEqual([[0, 'corrupt']]);
  });

  it('a decoding read takes its parity shards from the backends that have been answering fastest', async () => {
    const { faulty, map } = cluster(6);
    const data = randomBytes(rand, 4 * BLOCK * 2);
    const { unit } = await put(faulty, data);
    const gets = () => faulty.map((f) => f.calls.filter((c) => c.op === 'get').length);
    faulty[0]!.goOffline();
    faulty[4]!.delayWhen(100, (c) => c.op === 'get'); // parity 4 answers slowly...
    faulty.forEach((f) => f.calls.splice(0));
    expect(Buffer.compare(await get(unit, map), data)).toBe(0);
    expect(gets()).toEqual([1, 1, 1, 1, 1, 0]); // ...but nothing is known yet: index order
    faulty.forEach((f) => f.calls.splice(0));
    expect(Buffer.compare(await get(unit, map), data)).toBe(0);
    expect(gets(), 'the next degraded read prefers parity 5').toEqual([1, 1, 1, 1, 0, 1]);
  });

  it('hedges: a data shard slower than the threshold is decoded around, not waited for, and not reported', async () => {
    const { faulty, map } = cluster(6);
    const data = randomBytes(rand, 4 * BLOCK * 3);
    const { unit } = await put(faulty, data);
    faulty[2]!.delayWhen(60_000, (c) => c.op === 'get');
    const bad: ShardReadError[] = [];
    expect(Buffer.compare(await get(unit, map, 0, data.length - 1, bad, 50), data)).toBe(0);
    expect(bad).toEqual([]);
    expect(faulty[4]!.calls.some((c) => c.op === 'get')).toBe(true); // parity fetched instead
  });

  it('a busy pool is not a broken one: every shard slower than the hedge still serves, nothing is reported', async () => {
    const { faulty, map } = cluster(6);
    const data = randomBytes(rand, 4 * BLOCK * 4);
    const { unit } = await put(faulty, data);
    for (const f of faulty) f.delayWhen(40, (c) => c.op === 'get'); // every backend slow to answer
    const bad: ShardReadError[] = [];
    expect(Buffer.compare(await get(unit, map, 0, data.length - 1, bad, 5), data)).toBe(0);
    expect(bad, 'slow is not unhealthy').toEqual([]);
    // One shard gone as well: the read still decodes from the slow others.
    faulty[1]!.goOffline();
    expect(Buffer.compare(await get(unit, map, 0, data.length - 1, bad, 5), data)).toBe(0);
    expect(bad.map((e) => e.shardIndex)).toEqual([1]);
  });

  it('a backend that dies mid-upload costs one shard, not the write', async () => {
    const { faulty, map } = cluster(6);
    const dying = faulty[3]!;
    const realPut = dying.put.bind(dying);
    // Reads the first chunks of the shard stream, then fails as a dropped connection does.
    dying.put = async (key, body, length) => {
      if (body instanceof Uint8Array) return realPut(key, body, length);
      const reader = putBodyStream(body).getReader();
      await reader.read();
      await reader.cancel(new Error('connection reset'));
      throw new Error('connection reset');
    };
    const data = randomBytes(rand, 4 * BLOCK * 6);
    const { unit } = await put(faulty, data);
    expect(unit.missing).toEqual([3]);
    dying.put = realPut;
    expect(Buffer.compare(await get(unit, map), data)).toBe(0);
  });
});
