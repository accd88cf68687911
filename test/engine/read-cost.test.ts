/**
 * Cost-aware reads (issue 14, worker/engine/read-cost.ts) on the real read paths: striped units
 * (readUnit) and column units (UnitStore over a wide code), over memory backends behind the fault
 * wrapper and the traffic meter, with per-backend prices. What a read costs is measured from the
 * meter's counts (GETs and bytes per backend) times the prices: a priced read must cost
 * measurably less than the same read without prices, and with equal prices every request must be
 * exactly the one made without prices (same backends, same ranges, no decoding).
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { FaultyBackend, MemoryBackend } from '../../backends/index.ts';
import type { Backend } from '../../backends/types.ts';
import type { CodedUnit } from '../../worker/format/manifest.ts';
import { BackendLatency } from '../../worker/engine/backend-latency.ts';
import { BodyFeed } from '../../worker/engine/body-feed.ts';
import { TrafficMeter } from '../support/traffic-meter.ts';
import type { StoragePolicy } from '../../worker/engine/policy.ts';
import { BYTES_PER_GB, type BackendPrices } from '../../worker/model/prices.ts';
import { readUnit } from '../../worker/engine/unit-reader.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { writeUnit } from '../../worker/engine/unit-writer.ts';
import { presetPrices } from '../../worker/config/price-list.ts';
import { prng, randomBytes } from '../support/random.ts';
import { readBytes } from '../support/read-bytes.ts';
import { SubrequestProbe } from '../support/subrequest-probe.ts';

const B = 4096;
const AWS = presetPrices('aws-s3-standard'); // egress $0.09/GB
const R2 = presetPrices('cloudflare-r2'); // no egress fee
const B2 = presetPrices('backblaze-b2'); // egress $0.01/GB

function cluster(n: number) {
  const faulty = Array.from({ length: n }, (_, i) => new FaultyBackend(new MemoryBackend({ id: `b${i}`, domain: `d${i}` })));
  const c = {
    faulty,
    log: [] as string[],
    probe: new SubrequestProbe(),
    traffic: new TrafficMeter(),
    metered: [] as Backend[],
    map: new Map<string, Backend>(),
  };
  rewire(c);
  return c;
}
type Cluster = ReturnType<typeof cluster>;

/** Fresh counters: each backend behind a GET log, the traffic meter and the subrequest probe. */
function rewire(c: {
  faulty: FaultyBackend[];
  log: string[];
  probe: SubrequestProbe;
  traffic: TrafficMeter;
  metered: Backend[];
  map: Map<string, Backend>;
}): void {
  c.log.splice(0);
  c.faulty.forEach((f) => f.calls.splice(0));
  c.traffic = new TrafficMeter();
  c.metered = c.faulty.map((f) => c.probe.wrap(c.traffic.wrap(logged(f, c.log))));
  c.map = new Map(c.metered.map((b) => [b.id, b]));
}

function logged(b: Backend, log: string[]): Backend {
  return Object.assign(Object.create(b) as Backend, {
    id: b.id,
    domain: b.domain,
    get: (key: string, range?: { offset: number; length: number }, opts?: object) => {
      log.push(`${b.id} ${key} ${range ? `${range.offset}+${range.length}` : 'whole'}`);
      return b.get(key, range, opts);
    },
  });
}

function streamOf(bytes: Uint8Array): ReadableStream<Uint8Array> {
  let off = 0;
  return new ReadableStream({
    pull(c) {
      if (off >= bytes.length) return c.close();
      c.enqueue(bytes.slice(off, off + 1000));
      off += 1000;
    },
  });
}

/** Every GET since the last rewire, as "backend key range", sorted (reads run in parallel). */
function gets(c: Cluster): string[] {
  return [...c.log].sort();
}

/** Dollars of what the meter counted since the last reset, at `prices` (backend id -> prices). */
function measuredCost(c: Cluster, prices: Map<string, BackendPrices>): number {
  return c.traffic.snapshot().reduce((sum, t) => {
    const p = prices.get(t.backendId)!;
    return sum + ((t.gets + t.heads) * p.getPer1000) / 1000 + (t.bytesOut / BYTES_PER_GB) * p.egressPerGB;
  }, 0);
}

function reset(c: Cluster): void {
  rewire(c);
}

function book(...perBackend: BackendPrices[]): Map<string, BackendPrices> {
  return new Map(perBackend.map((p, i) => [`b${i}`, p]));
}

describe('striped units: cost-aware reads', () => {
  const rand = prng(14);
  let latency = new BackendLatency();
  beforeEach(() => void (latency = new BackendLatency()));

  async function put(c: Cluster, data: Uint8Array, o: { k?: number; m?: number; codec?: 'replica' } = {}): Promise<CodedUnit> {
    const k = o.k ?? 4,
      m = o.m ?? 2;
    const { unit } = await writeUnit({
      bucket: 'bkt',
      key: 'obj',
      unitId: 'u1',
      codec: o.codec ?? 'rs-cauchy-gf8',
      k,
      m,
      blockSize: B,
      writeQuorum: k + m,
      backends: c.metered,
      feed: new BodyFeed(streamOf(data), null, data.length),
      size: data.length,
    });
    reset(c);
    return unit;
  }

  async function get(c: Cluster, unit: CodedUnit, prices: Map<string, BackendPrices> | undefined, start = 0, end = unit.size - 1) {
    return readBytes(await readUnit({ bucket: 'bkt', unit, backends: c.map, start, end, latency, prices }));
  }

  it('parity on zero-egress backends replaces data shards on costly ones, and the read costs measurably less', async () => {
    const c = cluster(6);
    const data = randomBytes(rand, 4 * B * 8 + 100);
    const unit = await put(c, data);
    const prices = book(AWS, AWS, R2, R2, R2, R2); // data shards 0 and 1 on AWS, parity on R2

    expect(Buffer.compare(await get(c, unit, undefined), data)).toBe(0);
    const unpriced = { gets: c.faulty.map((f) => f.calls.filter((x) => x.op === 'get').length), dollars: measuredCost(c, prices) };
    expect(unpriced.gets, 'without prices: the data shards').toEqual([1, 1, 1, 1, 0, 0]);

    reset(c);
    expect(Buffer.compare(await get(c, unit, prices), data)).toBe(0);
    const priced = { gets: c.faulty.map((f) => f.calls.filter((x) => x.op === 'get').length), dollars: measuredCost(c, prices) };
    expect(priced.gets, 'with prices: no byte from AWS').toEqual([0, 0, 1, 1, 1, 1]);
    expect(
      c.traffic
        .snapshot()
        .filter((t) => t.backendId < 'b2')
        .reduce((s, t) => s + t.bytesOut, 0),
    ).toBe(0);
    expect(priced.dollars).toBeLessThan(unpriced.dollars / 2);
  });

  it('a small range on a costly data shard stays a single GET: k requests cost more than its egress', async () => {
    const c = cluster(6);
    const data = randomBytes(rand, 4 * B * 4);
    const unit = await put(c, data);
    const prices = book(AWS, AWS, R2, R2, R2, R2);
    // One block of shard 0: $0.0000004 (GET) + 4 KiB x $0.09/GB = $0.00000074; decoding would
    // take 4 R2 GETs ($0.00000144): the data shard is cheaper.
    expect(Buffer.compare(await get(c, unit, prices, 10, 20), data.subarray(10, 21))).toBe(0);
    expect(c.faulty.map((f) => f.calls.filter((x) => x.op === 'get').length)).toEqual([1, 0, 0, 0, 0, 0]);
    // A range on an R2 data shard: nothing to save.
    reset(c);
    expect(Buffer.compare(await get(c, unit, prices, 2 * B + 5, 2 * B + 50), data.subarray(2 * B + 5, 2 * B + 51))).toBe(0);
    expect(c.faulty.map((f) => f.calls.filter((x) => x.op === 'get').length)).toEqual([0, 0, 1, 0, 0, 0]);
  });

  it('equal prices make exactly the requests of a read without prices, healthy and degraded', async () => {
    for (const same of [AWS, R2, B2]) {
      const c = cluster(6);
      const data = randomBytes(rand, 4 * B * 5 + 7);
      const unit = await put(c, data);
      const prices = book(same, same, same, same, same, same);
      for (const [start, end, down] of [
        [0, data.length - 1, -1],
        [B + 3, 3 * B],
        [0, data.length - 1, 1],
        [100, 9 * B, 4],
      ] as const) {
        if (down !== undefined && down >= 0) c.faulty[down]!.goOffline();
        // b4 has answered slowly: a degraded read takes parity b5 first, priced or not.
        reset(c);
        latency = new BackendLatency();
        latency.record('b4', 300);
        expect(Buffer.compare(await get(c, unit, undefined, start, end), data.subarray(start, end + 1))).toBe(0);
        const without = gets(c);
        reset(c);
        latency = new BackendLatency();
        latency.record('b4', 300);
        expect(Buffer.compare(await get(c, unit, prices, start, end), data.subarray(start, end + 1))).toBe(0);
        expect(gets(c), `${start}-${end}, backend ${down} down`).toEqual(without);
        if (down !== undefined && down >= 0) c.faulty[down]!.goOnline();
      }
    }
  });

  it('a degraded read takes the cheapest parity, not the fastest', async () => {
    const c = cluster(6);
    const data = randomBytes(rand, 4 * B * 3);
    const unit = await put(c, data);
    const prices = book(R2, R2, R2, R2, AWS, R2);
    latency.record('b5', 500); // b5 answers slowly, b4 fast: without prices b4 would be taken
    c.faulty[1]!.goOffline();
    expect(Buffer.compare(await get(c, unit, prices), data)).toBe(0);
    const n = c.faulty.map((f) => f.calls.filter((x) => x.op === 'get').length);
    expect(n[4], 'AWS parity').toBe(0);
    expect(n[5], 'R2 parity').toBe(1);
  });

  it('replicas: the copy on the zero-egress backend serves the read', async () => {
    const c = cluster(3);
    const data = randomBytes(rand, 3 * B + 11);
    const unit = await put(c, data, { k: 1, m: 2, codec: 'replica' });
    const prices = book(AWS, B2, R2);
    expect(Buffer.compare(await get(c, unit, prices), data)).toBe(0);
    expect(c.faulty.map((f) => f.calls.filter((x) => x.op === 'get').length)).toEqual([0, 0, 1]);
  });

  it('a unit with a shard on an unpriced backend reads as without prices', async () => {
    const c = cluster(6);
    const data = randomBytes(rand, 4 * B * 4);
    const unit = await put(c, data);
    const prices = book(AWS, AWS, R2, R2, R2); // b5 unpriced
    expect(Buffer.compare(await get(c, unit, prices), data)).toBe(0);
    expect(c.faulty.map((f) => f.calls.filter((x) => x.op === 'get').length)).toEqual([1, 1, 1, 1, 0, 0]);
  });
});

describe('column units: cost-aware reads', () => {
  const rand = prng(15);
  const policy: StoragePolicy = {
    name: 'ec-8-3',
    codec: 'rs-cauchy-gf8',
    k: 8,
    m: 3,
    writeQuorum: 11,
    blockSize: B,
    small: { threshold: 0, mode: 'replicate', replicas: 3 },
  };

  async function store(c: Cluster, data: Uint8Array): Promise<CodedUnit[]> {
    const units = new UnitStore(c.metered, () => {}, { columnParityBytes: 3 * 16 * B });
    const plan = units.plan(data.length, policy, false);
    const stored = await units.storeBody({ bucket: 'bkt', key: 'obj', body: streamOf(data), size: data.length, policy, plan, checksum: null });
    if (stored.storage.kind !== 'coded') throw new Error('not coded');
    reset(c);
    return stored.storage.units;
  }

  async function read(c: Cluster, units: CodedUnit[], prices: Map<string, BackendPrices> | undefined, start: number, end: number) {
    const store = new UnitStore(c.metered, () => {}, { columnParityBytes: 3 * 16 * B, prices });
    return readBytes(await store.open('bkt', 'obj', { kind: 'coded', units }, start, end));
  }

  it('rows of a data shard on a costly backend are rebuilt from zero-egress shards, and cost less', async () => {
    const c = cluster(11);
    const data = randomBytes(rand, 8 * 16 * B);
    const units = await store(c, data);
    expect(units.length).toBe(1);
    const placement = units[0]!.placement;
    // Data shard 3's backend is on AWS; every other backend on R2.
    const prices = new Map(c.faulty.map((f) => [f.id, f.id === placement[3] ? AWS : R2]));

    expect(Buffer.compare(await read(c, units, undefined, 0, data.length - 1), data)).toBe(0);
    const unpriced = measuredCost(c, prices);
    expect(c.faulty.find((f) => f.id === placement[3])!.calls.some((x) => x.op === 'get')).toBe(true);

    reset(c);
    expect(Buffer.compare(await read(c, units, prices, 0, data.length - 1), data)).toBe(0);
    expect(
      c.faulty.find((f) => f.id === placement[3])!.calls.some((x) => x.op === 'get'),
      'nothing read from AWS',
    ).toBe(false);
    expect(measuredCost(c, prices)).toBeLessThan(unpriced);
    expect(c.probe.violations).toEqual([]);
  });

  it('equal prices make exactly the requests of a read without prices', async () => {
    const c = cluster(11);
    const data = randomBytes(rand, 8 * 5 * B + 999);
    const units = await store(c, data);
    const prices = new Map(c.faulty.map((f) => [f.id, AWS]));
    for (const [start, end] of [
      [0, data.length - 1],
      [3 * B + 1, 17 * B],
    ]) {
      reset(c);
      expect(Buffer.compare(await read(c, units, undefined, start!, end!), data.subarray(start!, end! + 1))).toBe(0);
      const without = gets(c);
      reset(c);
      expect(Buffer.compare(await read(c, units, prices, start!, end!), data.subarray(start!, end! + 1))).toBe(0);
      expect(gets(c)).toEqual(without);
    }
  });
});
