/**
 * Redundancy per policy in units and bytes (issue 27), from the real catalog through to what the
 * operator reads: objects written by EcStore into two buckets of two policies (media: 4+2; logs:
 * three replicas, 1+2) over the in-process catalog, shards then recorded missing as a read or the
 * scrubber records them; the status document, the metrics (as the official Prometheus client
 * parses them) and `shardgate status` show every unit, whole ones too, by shards left with their
 * object bytes, per bucket and summed, and the units sum to the units stored.
 */
import { describe, expect, it } from 'vitest';
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
import type { PolicyRedundancy } from '../../worker/catalog/redundancy.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { DEV_KEY_RING } from '../support/dev-encryption.ts';
import { parseMetrics, valueOf } from './helpers.ts';

const stream = (n: number) => new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(new Uint8Array(n).fill(n % 251)), c.close()) });
/** A policy's ladder as "shards left:units/bytes", whole first, then below k. */
const ladder = (p: PolicyRedundancy | undefined) =>
  p ? [...p.byShardsLeft.map((s) => `${s.shardsLeft}:${s.units}/${s.bytes}`), `<k:${p.belowK.units}/${p.belowK.bytes}`] : null;

async function setup() {
  const memory = Array.from({ length: 6 }, (_, i) => new MemoryBackend({ id: `b${i}`, domain: `z${i}` }));
  const config = parseConfig({
    backends: memory.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
    policies: { ec: { k: 4, m: 2, blockSize: 4096 }, three: { codec: 'replicate', replicas: 3, blockSize: 4096 } },
    defaultPolicy: 'ec',
    buckets: { logs: 'three' },
  });
  const catalog = localCatalog();
  const meter = new IsolateMeter();
  const backends = memory.map((b) => new MeteredBackend(b, (r) => meter.backendCall(r)));
  const store = new EcStore({ catalog, units: new UnitStore(backends, undefined, { keyRing: DEV_KEY_RING }), settings: engineSettings(config) });
  const record = new MemoryOpsRecord();
  const ops = new OpsService({
    config: {
      backends: memory.map((b) => ({ id: b.id, domain: b.domain })),
      policies: { ec: { codec: 'rs', k: 4, m: 2, writeQuorum: 5 }, three: { codec: 'replica', k: 1, m: 2 } },
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
  const put = (bucket: string, key: string, size: number) =>
    store.putObject(bucket, key, stream(size), { contentLength: size, metadata: { user: {} }, checksum: null, conditions: {} });
  // media (4+2): a 10000, b 20000, c 30000, d 40000 bytes, one unit each; logs (three copies): x 5000, y 7000.
  for (const bucket of ['media', 'logs']) await store.createBucket(bucket, { region: 'us-east-1' });
  for (const [key, size] of [
    ['a', 10_000],
    ['b', 20_000],
    ['c', 30_000],
    ['d', 40_000],
  ] as const)
    await put('media', key, size);
  for (const [key, size] of [
    ['x', 5_000],
    ['y', 7_000],
  ] as const)
    await put('logs', key, size);
  const unitOf = async (bucket: string, key: string) => {
    const m = await catalog.getManifest(bucket, key);
    if (m?.storage.kind !== 'coded') throw new Error(`${key} is not coded`);
    return m.storage.units[0]!;
  };
  return { catalog, ops, unitOf };
}

describe('redundancy per policy, in units and bytes', () => {
  it('the status, the metrics and shardgate status count every unit by shards left, per bucket and summed', async () => {
    const { catalog, ops, unitOf } = await setup();
    // Damage as reads and the scrubber record it: one media unit a shard short, one at exactly k,
    // one logs unit (1+2) down to its last copy, and one below k.
    await catalog.markMissing('media', (await unitOf('media', 'a')).unitId, [1], 'a');
    await catalog.markMissing('media', (await unitOf('media', 'b')).unitId, [0, 3], 'b');
    await catalog.markMissing('logs', (await unitOf('logs', 'x')).unitId, [0, 2], 'x');
    await catalog.markMissing('media', (await unitOf('media', 'c')).unitId, [0, 1, 2], 'c');

    const { doc, totals } = await ops.status({ signed: true, hours: 1, probe: false });
    const media = doc.buckets!.find((b) => b.bucket === 'media')!,
      logs = doc.buckets!.find((b) => b.bucket === 'logs')!;
    expect(ladder(media.redundancy.byPolicy['4+2'])).toEqual(['6:1/40000', '5:1/10000', '4:1/20000', '<k:1/30000']);
    expect(ladder(logs.redundancy.byPolicy['1+2'])).toEqual(['3:1/7000', '2:0/0', '1:1/5000', '<k:0/0']);
    for (const b of [media, logs]) {
      const units = Object.values(b.redundancy.byPolicy)
        .flatMap((p) => [...p.byShardsLeft.map((s) => s.units), p.belowK.units])
        .reduce((x, y) => x + y, 0);
      expect(units, b.bucket).toBe(b.scrub.units); // whole units included: the ladder sums to the units stored
    }
    const d = doc.data.redundancy;
    expect(Object.keys(d.byPolicy).sort()).toEqual(['1+2', '4+2']);
    expect(ladder(d.byPolicy['4+2'])).toEqual(ladder(media.redundancy.byPolicy['4+2']));
    expect(d).toMatchObject({ atRisk: 2, atRiskBytes: 25000, lost: 1, lostBytes: 30000 });
    expect(doc.checks.find((c) => c.name === 'redundancy')).toMatchObject({ state: 'critical' });

    // The metrics, as a scraper parses them: the existing series, the bytes, the ladders.
    const m = await parseMetrics(renderMetrics(doc, totals));
    expect(valueOf(m, 'shardgate_units_redundancy', { state: 'at_risk' })).toBe(2);
    expect(valueOf(m, 'shardgate_units_redundancy_bytes', { state: 'at_risk' })).toBe(25000);
    expect(valueOf(m, 'shardgate_units_redundancy_bytes', { state: 'lost' })).toBe(30000);
    expect(valueOf(m, 'shardgate_units_missing_shards', { missing: '2' })).toBe(2);
    expect(valueOf(m, 'shardgate_policy_units', { policy: '4+2', shards_left: '6' })).toBe(1);
    expect(valueOf(m, 'shardgate_policy_units', { policy: '4+2', shards_left: 'below_k' })).toBe(1);
    expect(valueOf(m, 'shardgate_policy_unit_bytes', { policy: '1+2', shards_left: '1' })).toBe(5000);
    expect(valueOf(m, 'shardgate_bucket_policy_unit_bytes', { bucket: 'media', policy: '4+2', shards_left: '5' })).toBe(10000);
    expect(valueOf(m, 'shardgate_bucket_policy_units', { bucket: 'logs', policy: '4+2', shards_left: '6' })).toBeUndefined();
    const policyUnits = m.filter((s) => s.name === 'shardgate_policy_units').reduce((n, s) => n + s.value, 0);
    expect(policyUnits).toBe(valueOf(m, 'shardgate_scrub_units'));

    // shardgate status: the bytes beside the counts, and the ladder table per bucket.
    const text = render(doc as unknown as StatusLike);
    expect(text).toMatch(/at exactly k shards 2 \(24\.4 KiB\), below k 1 \(29\.3 KiB\)/);
    expect(text).toMatch(/^\(all\)\s+4\+2\s+6 \(whole\)\s+1\s+39\.1 KiB$/m);
    expect(text).toMatch(/^\(all\)\s+4\+2\s+below k \(lost\)\s+1\s+29\.3 KiB$/m);
    expect(text).toMatch(/^media\s+4\+2\s+4 \(exactly k\)\s+1\s+19\.5 KiB$/m);
    expect(text).toMatch(/^logs\s+1\+2\s+3 \(whole\)\s+1\s+6\.8 KiB$/m);
  });

  it('repairs move units back up the ladder; an unsigned status carries the sums without bucket names', async () => {
    const { catalog, ops, unitOf } = await setup();
    const b = await unitOf('media', 'b');
    await catalog.markMissing('media', b.unitId, [0, 3], 'b');
    let doc = (await ops.status({ signed: false, hours: 1, probe: false })).doc;
    expect(doc.buckets).toBeUndefined();
    expect(ladder(doc.data.redundancy.byPolicy['4+2'])).toEqual(['6:3/80000', '5:0/0', '4:1/20000', '<k:0/0']);
    await catalog.markRepaired('media', b.unitId, [0], 'b');
    doc = (await ops.status({ signed: false, hours: 1, probe: false })).doc;
    expect(ladder(doc.data.redundancy.byPolicy['4+2'])).toEqual(['6:3/80000', '5:1/20000', '4:0/0', '<k:0/0']);
    await catalog.markRepaired('media', b.unitId, [3], 'b');
    doc = (await ops.status({ signed: false, hours: 1, probe: false })).doc;
    expect(ladder(doc.data.redundancy.byPolicy['4+2'])).toEqual(['6:4/100000', '5:0/0', '4:0/0', '<k:0/0']);
    expect(doc.data.redundancy).toMatchObject({ atRisk: 0, atRiskBytes: 0, lost: 0, lostBytes: 0 });
  });
});
