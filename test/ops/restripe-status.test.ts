/**
 * A re-stripe's progress as the operator reads it (issue 26): a bucket moved from 4+2 to 8+3
 * over the in-process catalog, half of it rewritten; the status document (gateway-wide sums, the
 * bucket's progress when signed, nothing named when not), the metrics (as the official
 * Prometheus client parses them) and `shardgate status` show the units and bytes left, the
 * versions rewritten, and once it is done, 0 left.
 */
import { describe, expect, it } from 'vitest';
import { render } from '../../cli/commands/status.ts';
import type { StatusLike } from '../../cli/gateway-client.ts';
import { MemoryBackend } from '../../backends/memory.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { policyFor } from '../../worker/engine/policy.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { MemoryOpsRecord } from '../../worker/ops/book.ts';
import { OpsFlusher } from '../../worker/ops/flusher.ts';
import { IsolateMeter } from '../../worker/ops/meter.ts';
import { renderMetrics } from '../../worker/ops/prometheus.ts';
import { OpsService } from '../../worker/ops/service.ts';
import { restripeBatch } from '../../worker/upkeep/restripe.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { parseMetrics, valueOf } from './helpers.ts';

const stream = (n: number) => new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(new Uint8Array(n).fill(n % 251)), c.close()) });

describe('re-stripe progress in the status, the metrics and shardgate status', () => {
  it('shows units and bytes left, what was rewritten, and 0 left once done', async () => {
    const memory = Array.from({ length: 11 }, (_, i) => new MemoryBackend({ id: `b${i}`, domain: `z${i}` }));
    const configOf = (policy: string) =>
      parseConfig({
        backends: memory.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
        policies: { old: { k: 4, m: 2, blockSize: 4096 }, wide: { k: 8, m: 3, blockSize: 4096 } },
        defaultPolicy: 'old',
        buckets: { media: policy },
      });
    const catalog = localCatalog();
    const units = new UnitStore(memory);
    const writer = new EcStore({ catalog, units, settings: engineSettings(configOf('old')) });
    for (const bucket of ['media', 'other']) await writer.createBucket(bucket, { region: 'us-east-1' });
    for (let i = 0; i < 6; i++)
      await writer.putObject('media', `k${i}`, stream(10_000), { contentLength: 10_000, metadata: { user: {} }, checksum: null, conditions: {} });
    await writer.putObject('other', 'o', stream(9_000), { contentLength: 9_000, metadata: { user: {} }, checksum: null, conditions: {} });
    const settings = engineSettings(configOf('wide'));
    const meter = new IsolateMeter();
    const record = new MemoryOpsRecord();
    const ops = new OpsService({
      config: {
        backends: memory.map((b) => ({ id: b.id, domain: b.domain })),
        policies: { old: { codec: 'rs', k: 4, m: 2 }, wide: { codec: 'rs', k: 8, m: 3 } },
        defaultPolicy: 'old',
        coder: { kernel: 'scalar', crc32: 'js' },
        scrubMode: 'heads',
        deployment: { mode: 'local', warnings: [] },
        policyOf: (b) => policyFor(settings, b),
      },
      catalog,
      backends: memory,
      meter,
      record,
      flusher: new OpsFlusher(meter, (d) => record.record(d), 5000),
      probeEveryMs: 30_000,
    });
    const deps = { catalog, units, settings, graceMs: 0, writeReservationSeconds: 3600, fleet: [] };
    expect(await restripeBatch(deps, { maxVersions: 3, deadline: Date.now() + 30_000 })).toMatchObject({ rewritten: 3, stopped: true });

    const { doc, totals } = await ops.status({ signed: true, hours: 1, probe: false });
    expect(doc.data.restripe).toMatchObject({ buckets: 1, leftUnits: 3, leftBytes: 30_000, rewrittenVersions: 3, rewrittenBytes: 30_000 });
    const media = doc.buckets!.find((b) => b.bucket === 'media')!;
    expect(media.restripeProgress).toMatchObject({ policy: 'wide', left: { units: 3, bytes: 30_000 }, inPass: true, done: false });
    expect(doc.buckets!.find((b) => b.bucket === 'other')!.restripeProgress).toBeUndefined(); // its policy did not change
    const unsigned = (await ops.status({ signed: false, hours: 1, probe: false })).doc;
    expect(unsigned.buckets).toBeUndefined();
    expect(unsigned.data.restripe.leftUnits).toBe(3);

    const m = await parseMetrics(renderMetrics(doc, totals));
    expect(valueOf(m, 'shardgate_restripe_left_units')).toBe(3);
    expect(valueOf(m, 'shardgate_restripe_left_bytes')).toBe(30_000);
    expect(valueOf(m, 'shardgate_bucket_restripe_left_units', { bucket: 'media' })).toBe(3);
    expect(valueOf(m, 'shardgate_bucket_restripe_left_units', { bucket: 'other' })).toBeUndefined();
    expect(render(doc as unknown as StatusLike)).toMatch(/re-stripe: 1 bucket\(s\) moving to their policy now, 3 unit\(s\) \(.*\) left, 3 version\(s\)/);

    await restripeBatch(deps, { maxVersions: 100, deadline: Date.now() + 30_000 });
    const after = (await ops.status({ signed: true, hours: 1, probe: false })).doc;
    expect(after.data.restripe).toMatchObject({ buckets: 0, leftUnits: 0, rewrittenVersions: 6 });
    expect(after.buckets!.find((b) => b.bucket === 'media')!.restripeProgress).toMatchObject({ left: { units: 0 }, done: true });
    expect(render(after as unknown as StatusLike)).not.toMatch(/re-stripe:/);
  });
});
