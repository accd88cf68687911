/**
 * Shards on backends that are down count as missing in the redundancy counts (issue 37, "operator
 * truth"): an outside drill took 3 of 6 backends down, every 4+2 unit was unreadable, and the
 * status, the metrics and `shardgate status` said "0 at exactly k, 0 below k" because nothing had
 * been read yet, so the documented alert never fired. Here 4 objects are written over 6 memory
 * backends (every unit has one shard on each), backends are then found down by the probe (the
 * gateway's health), and the counts are read back the way an operator reads them.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { render } from '../../cli/commands/status.ts';
import type { StatusLike } from '../../cli/gateway-client.ts';
import { MemoryBackend } from '../../backends/memory.ts';
import { MeteredBackend } from '../../backends/metered.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { MemoryOpsRecord } from '../../worker/ops/book.ts';
import { OpsFlusher } from '../../worker/ops/flusher.ts';
import { IsolateMeter } from '../../worker/ops/meter.ts';
import { renderMetrics } from '../../worker/ops/prometheus.ts';
import { OpsService } from '../../worker/ops/service.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { DEV_KEY_RING } from '../support/dev-encryption.ts';
import { parseMetrics, valueOf } from './helpers.ts';
import { emptyCounters } from '../../worker/ops/counters.ts';
import { flushJournal } from '../../worker/upkeep/journal.ts';

const stream = (n: number) => new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(new Uint8Array(n).fill(n % 251)), c.close()) });

async function setup(maintenance: string[] = []) {
  const memory = Array.from({ length: 6 }, (_, i) => new MemoryBackend({ id: `b${i}`, domain: `z${i}` }));
  const config = parseConfig({
    backends: memory.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
    policies: { ec: { k: 4, m: 2, blockSize: 4096 } },
    defaultPolicy: 'ec',
  });
  const catalog = localCatalog();
  const meter = new IsolateMeter();
  const backends = memory.map((b) => new MeteredBackend(b, (r) => meter.backendCall(r)));
  const units = new UnitStore(backends, undefined, { keyRing: DEV_KEY_RING });
  const store = new EcStore({ catalog, units, settings: engineSettings(config) });
  const record = new MemoryOpsRecord();
  const ops = new OpsService({
    config: {
      backends: memory.map((b) => ({ id: b.id, domain: b.domain, maintenance: maintenance.includes(b.id) })),
      policies: { ec: { codec: 'rs', k: 4, m: 2, writeQuorum: 5 } },
      defaultPolicy: 'ec',
      coder: { kernel: 'scalar', crc32: 'js' },
      scrubMode: 'heads',
      deployment: { mode: 'local', warnings: [] },
    },
    catalog,
    backends,
    meter,
    record,
    flusher: new OpsFlusher(meter, (d) => record.record(d), 5000),
    probeEveryMs: 30_000,
  });
  await store.createBucket('media', { region: 'us-east-1' });
  for (const [key, size] of [
    ['a', 10_000],
    ['b', 20_000],
    ['c', 30_000],
    ['d', 40_000],
  ] as const) {
    await store.putObject('media', key, stream(size), { contentLength: size, metadata: { user: {} }, checksum: null, conditions: {} });
  }
  // Later than every write: the probes' failures are the backends' latest news.
  vi.setSystemTime(Date.now() + 60_000);
  const down = (...ids: string[]) => ids.forEach((id) => meter.probe(id, { ok: false, ms: 5000, error: 'no answer within 5000 ms' }));
  const unitOf = async (key: string) => {
    const m = await catalog.getManifest('media', key);
    if (m?.storage.kind !== 'coded') throw new Error(`${key} is not coded`);
    return m.storage.units[0]!;
  };
  const journal = () => flushJournal({ catalog, units, policy: config.policies.ec! }, { deadline: Date.now() + 60_000 });
  return { catalog, ops, record, down, unitOf, journal };
}

describe('shards on unreachable backends count as missing', () => {
  beforeEach(() => void vi.useFakeTimers({ toFake: ['Date'] }));
  afterEach(() => void vi.useRealTimers());

  it('3 of 6 down: every unit is below k in the status, the checks, the metrics and shardgate status', async () => {
    const { ops, down } = await setup();
    down('b0', 'b1', 'b2');
    const { doc, totals } = await ops.status({ signed: true, hours: 1, probe: false });
    expect(doc.backends.filter((b) => b.state === 'down').map((b) => b.id)).toEqual(['b0', 'b1', 'b2']);
    expect(doc.data.redundancy).toMatchObject({ atRisk: 0, lost: 4, lostBytes: 100_000, byMissing: { 3: 4 } });
    expect(doc.data.redundancy.byPolicy['4+2']!.belowK).toEqual({ units: 4, bytes: 100_000 });
    expect(doc.buckets![0]!.redundancy.lost).toBe(4);
    expect(doc.buckets![0]).not.toHaveProperty('placements');
    expect(doc.checks.find((c) => c.name === 'redundancy')).toMatchObject({ state: 'critical' });
    expect(doc.series.samples.at(-1)).toMatchObject({ unitsLost: 4 }); // the plots too

    const m = await parseMetrics(renderMetrics(doc, totals));
    expect(valueOf(m, 'shardgate_units_redundancy', { state: 'lost' })).toBe(4); // the documented alert's series
    expect(valueOf(m, 'shardgate_policy_units', { policy: '4+2', shards_left: 'below_k' })).toBe(4);
    expect(valueOf(m, 'shardgate_policy_units', { policy: '4+2', shards_left: '6' })).toBe(0);
    expect(render(doc as unknown as StatusLike)).toMatch(/at exactly k shards 0 \(0 B\), below k 4 \(97\.7 KiB\)/);
  });

  it('2 down: every unit at exactly k; a unit already missing a shard elsewhere is below k; back up: whole again', async () => {
    const { catalog, ops, down, unitOf } = await setup();
    const a = await unitOf('a');
    await catalog.markMissing('media', a.unitId, [a.placement.indexOf('b5')], 'a');
    down('b0', 'b1');
    let doc = (await ops.status({ signed: false, hours: 1, probe: false })).doc;
    expect(doc.data.redundancy).toMatchObject({ atRisk: 3, atRiskBytes: 90_000, lost: 1, lostBytes: 10_000 });
    expect(doc.data.redundancy.byPolicy['4+2']!.byShardsLeft.map((s) => s.units)).toEqual([0, 0, 3]);

    // The probe finds them again: only the recorded damage is left.
    vi.setSystemTime(Date.now() + 60_000);
    await ops.status({ signed: false, hours: 1, probe: true });
    doc = (await ops.status({ signed: false, hours: 1, probe: false })).doc;
    expect(doc.backends.every((b) => b.state !== 'down')).toBe(true);
    expect(doc.data.redundancy).toMatchObject({ atRisk: 0, lost: 0 });
    expect(doc.data.redundancy.byPolicy['4+2']!.byShardsLeft.map((s) => s.units)).toEqual([3, 1, 0]);
  });

  it("the catalog journal's units too: 2 down, the bucket's 4+2 segment at exactly k (warning); 3 down, below k (critical); all down, every unit lost", async () => {
    const { ops, down, journal } = await setup();
    expect((await journal()).segments).toBeGreaterThan(0);
    vi.setSystemTime(Date.now() + 60_000); // the probes' failures below are later than the journal's writes
    let doc = (await ops.status({ signed: true, hours: 1, probe: false })).doc;
    // The bucket's segment (4+2, a shard on each backend) and the bucket list's (three replicas).
    expect(doc.data.journal).toMatchObject({ units: 2, atRisk: 0, lost: 0, byCode: { '4+2': 1, '1+2': 1 } });
    expect(doc.checks.find((c) => c.name === 'journal-redundancy')).toMatchObject({ state: 'ok' });

    down('b0', 'b1');
    doc = (await ops.status({ signed: true, hours: 1, probe: false })).doc;
    expect(doc.buckets![0]!.journal?.redundancy).toMatchObject({ units: 1, atRisk: 1, lost: 0 });
    expect(doc.buckets![0]!.journal?.redundancy).not.toHaveProperty('placements'); // counts only
    expect(doc.data.journal.atRisk).toBeGreaterThanOrEqual(1);
    expect(doc.checks.find((c) => c.name === 'journal-redundancy')).toMatchObject({ state: 'warning' });

    down('b2');
    doc = (await ops.status({ signed: true, hours: 1, probe: false })).doc;
    expect(doc.buckets![0]!.journal?.redundancy).toMatchObject({ units: 1, atRisk: 0, lost: 1 });
    expect(doc.checks.find((c) => c.name === 'journal-redundancy')).toMatchObject({ state: 'critical' });

    down('b3', 'b4', 'b5');
    doc = (await ops.status({ signed: false, hours: 1, probe: false })).doc;
    expect(doc.data.journal).toMatchObject({ units: 2, atRisk: 0, lost: 2 });
  });

  it("the cron's sample counts them too", async () => {
    const { ops, record, down } = await setup();
    down('b3', 'b4', 'b5');
    // The cron probes first: memory backends answer, so make those three fail their probe.
    const cron = ops as unknown as { deps: { backends: { head: (k: string) => Promise<unknown> }[] } };
    for (const i of [3, 4, 5])
      cron.deps.backends[i]!.head = () => Promise.reject(Object.assign(new Error('down'), { name: 'BackendError', kind: 'Unavailable' }));
    await ops.onCron();
    const snap = await record.snapshot(0);
    expect(snap.samples.at(-1)).toMatchObject({ unitsLost: 4 });
  });

  it('a backend in maintenance: its shards count as missing, no warning of its own, shown in the status, the metrics and shardgate status', async () => {
    const { ops } = await setup(['b5']);
    const { doc, totals } = await ops.status({ signed: true, hours: 1, probe: false });
    expect(doc.backends.find((b) => b.id === 'b5')).toMatchObject({ maintenance: true });
    expect(doc.data.redundancy.byPolicy['4+2']!.byShardsLeft.map((s) => s.units)).toEqual([0, 4, 0]);
    const backendsCheck = doc.checks.find((c) => c.name === 'backends')!;
    expect(backendsCheck.state).toBe('ok');
    expect(backendsCheck.detail).toMatch(/in maintenance \(known down, no warning\): b5/);
    expect(doc.checks.find((c) => c.name === 'reads:ec')).toMatchObject({ state: 'ok' }); // one down, m=2
    expect(doc.health).toBe('ok');
    const m = await parseMetrics(renderMetrics(doc, totals));
    expect(valueOf(m, 'shardgate_backend_maintenance', { backend: 'b5' })).toBe(1);
    expect(valueOf(m, 'shardgate_backend_maintenance', { backend: 'b0' })).toBe(0);
    expect(render(doc as unknown as StatusLike)).toMatch(/^b5\s+z5\s+\S+ \(maintenance\)/m);
  });
});

describe('recovery rates in the status and the metrics', () => {
  beforeEach(() => void vi.useFakeTimers({ toFake: ['Date'] }));
  afterEach(() => void vi.useRealTimers());

  it('repairs begun 20 s ago at 2 units/s with 4 units left: 2 s (the window average said 8 units/min, 30 s)', async () => {
    const { ops, record, catalog, unitOf } = await setup();
    for (const key of ['a', 'b', 'c', 'd']) await catalog.markMissing('media', (await unitOf(key)).unitId, [0], key); // a backlog of 4
    const now = Date.now();
    for (const s of [5, 10, 15, 20]) await record.record({ ...emptyCounters(), at: now - 25_000 + s * 1000, events: { repairs_done: 10 } });
    const { doc, totals } = await ops.status({ signed: false, hours: 1, probe: false });
    expect(doc.upkeep.rates).toMatchObject({ repairUnitsPerMinute: 120, repairSecondsLeft: 2, repairActiveSince: now - 20_000 });
    const m = await parseMetrics(renderMetrics(doc, totals));
    expect(valueOf(m, 'shardgate_repair_units_per_second')).toBe(2);
    expect(valueOf(m, 'shardgate_repair_seconds_remaining')).toBe(2);
    expect(render(doc as unknown as StatusLike)).toMatch(/^repair 120 units\/min over the last 20 s \(about 2 s left at that rate\)/m);
  });
});
