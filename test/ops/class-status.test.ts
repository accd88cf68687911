/**
 * Bytes per storage class (issue 44) as the operator reads them: versions written as STANDARD and
 * STANDARD_IA, one moved by a lifecycle transition and one deleted, over the in-process catalog.
 * The status document (gateway-wide and per bucket), the metrics (as the official Prometheus
 * client parses them) and `shardgate status` show each class's versions, object bytes and stored
 * bytes, counted by the buckets' ledgers (no call besides the health read the status makes). A
 * catalog whose classed versions were stored before the ledger counted classes is counted once
 * from the manifests when it opens (schema-migrations.ts `class-counts`), to the same figures.
 */
import { describe, expect, it } from 'vitest';
import { render } from '../../cli/commands/status.ts';
import type { StatusLike } from '../../cli/gateway-client.ts';
import { MemoryBackend } from '../../backends/memory.ts';
import { migrate } from '../../worker/catalog/schema-migrations.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { MemoryOpsRecord } from '../../worker/ops/book.ts';
import { OpsFlusher } from '../../worker/ops/flusher.ts';
import { IsolateMeter } from '../../worker/ops/meter.ts';
import { renderMetrics } from '../../worker/ops/prometheus.ts';
import { OpsService } from '../../worker/ops/service.ts';
import { upkeepObserver } from '../../worker/gateway.ts';
import { lifecycleBatch } from '../../worker/upkeep/lifecycle.ts';
import { Transitioner } from '../../worker/upkeep/transition.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { parseMetrics, valueOf } from './helpers.ts';

const stream = (n: number) => new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(new Uint8Array(n).fill(n % 251)), c.close()) });
const DAY = 60_000;

describe('bytes per storage class in the status, the metrics and shardgate status', () => {
  it('counts each class from the ledgers, follows transitions and deletes, and counts older storage once', async () => {
    const memory = Array.from({ length: 6 }, (_, i) => new MemoryBackend({ id: `b${i}`, domain: `z${i}` }));
    const config = parseConfig({
      backends: memory.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
      policies: { hot: { k: 4, m: 2, blockSize: 4096 }, cold: { k: 4, m: 1, blockSize: 4096 } },
      defaultPolicy: 'hot',
      storageClasses: { STANDARD_IA: 'cold' },
    });
    const settings = engineSettings(config);
    const catalog = localCatalog();
    const units = new UnitStore(memory);
    const store = new EcStore({ catalog, units, settings });
    for (const bucket of ['media', 'other']) await store.createBucket(bucket, { region: 'us-east-1' });
    const put = (bucket: string, key: string, n: number, storageClass?: string) =>
      store.putObject(bucket, key, stream(n), {
        contentLength: n,
        metadata: { user: {}, ...(storageClass ? { storageClass } : {}) },
        checksum: null,
        conditions: {},
      });
    await put('media', 'hot-1', 10_000);
    await put('media', 'hot-2', 12_000);
    await put('media', 'old/moved', 20_000);
    await put('media', 'ia-1', 30_000, 'STANDARD_IA');
    await put('media', 'ia-gone', 5_000, 'STANDARD_IA');
    await put('other', 'ia', 8_000, 'STANDARD_IA');
    await put('other', 'tiny', 100); // inline: a STANDARD version with no shard files
    await store.deleteObject('media', 'ia-gone', {});
    // A rule moves old/ to STANDARD_IA; the job runs two days on.
    await store.config.putBucketLifecycle('media', [
      { id: 'old', status: 'Enabled', filter: { prefix: 'old/' }, transitions: [{ days: 1, storageClass: 'STANDARD_IA' }] },
    ]);
    const deps = { catalog, units, settings, graceMs: 0, writeReservationSeconds: 3600, fleet: [] };
    const transition = new Transitioner(deps, { maxVersions: 10, maxRequests: 1000, deadline: Date.now() + 60_000 }).transition;
    const report = await lifecycleBatch(
      catalog,
      { deleteObject: store.deleteObject, abortMultipartUpload: store.abortMultipartUpload, transition },
      { dayMs: DAY, now: () => Date.now() + 2 * DAY },
    );
    expect(report).toMatchObject({ transitioned: 1, transitionedBytes: 20_000, failed: 0 });

    const meter = new IsolateMeter();
    // The run counted as the gateway counts it (gateway.ts upkeepObserver).
    upkeepObserver(meter).lifecycled(report, 5, 'operator');
    const record = new MemoryOpsRecord();
    const flusher = new OpsFlusher(meter, (d) => record.record(d), 5000);
    const ops = new OpsService({
      config: {
        backends: memory.map((b) => ({ id: b.id, domain: b.domain })),
        policies: { hot: { codec: 'rs', k: 4, m: 2 }, cold: { codec: 'rs', k: 4, m: 1 } },
        defaultPolicy: 'hot',
        coder: { kernel: 'scalar', crc32: 'js' },
        scrubMode: 'heads',
        deployment: { mode: 'local', warnings: [] },
      },
      catalog,
      backends: memory,
      meter,
      record,
      flusher,
      probeEveryMs: 30_000,
    });
    await flusher.flush();
    const { doc, totals } = await ops.status({ signed: true, hours: 1, probe: false });
    expect(doc.upkeep).toMatchObject({ lifecycleTransitioned: 1, lifecycleTransitionedBytes: 20_000, lifecycleTransitionsBlocked: 0 });
    const classes = doc.data.classes;
    expect(Object.keys(classes).sort()).toEqual(['STANDARD', 'STANDARD_IA']);
    expect(classes.STANDARD).toMatchObject({ objects: 3, bytes: 10_000 + 12_000 + 100 });
    expect(classes.STANDARD_IA).toMatchObject({ objects: 3, bytes: 20_000 + 30_000 + 8_000 });
    // Stored bytes: every shard file, split between the classes: 6/4 and 5/4 of the data, and their headers and footers.
    expect(classes.STANDARD!.storedBytes + classes.STANDARD_IA!.storedBytes).toBe(doc.data.storedBytes);
    expect(classes.STANDARD!.storedBytes).toBeGreaterThan(22_000 * 1.5);
    expect(classes.STANDARD!.storedBytes).toBeLessThan(22_000 * 1.8);
    expect(classes.STANDARD_IA!.storedBytes).toBeGreaterThan(58_000 * 1.25);
    expect(classes.STANDARD_IA!.storedBytes).toBeLessThan(58_000 * 1.45);
    expect(classes.STANDARD_IA!.storedBytes / 58_000).toBeLessThan(classes.STANDARD!.storedBytes / 22_000);
    const other = doc.buckets!.find((b) => b.bucket === 'other')!;
    expect(other.classes).toEqual({ STANDARD: { objects: 1, bytes: 100, storedBytes: 0 }, STANDARD_IA: expect.objectContaining({ objects: 1, bytes: 8_000 }) });
    // Unsigned: the sums, no bucket.
    expect((await ops.status({ signed: false, hours: 1, probe: false })).doc.data.classes).toEqual(classes);

    const m = await parseMetrics(renderMetrics(doc, totals));
    expect(valueOf(m, 'shardgate_class_objects', { class: 'STANDARD_IA' })).toBe(3);
    expect(valueOf(m, 'shardgate_class_object_bytes', { class: 'STANDARD' })).toBe(22_100);
    expect(valueOf(m, 'shardgate_class_stored_bytes', { class: 'STANDARD_IA' })).toBe(classes.STANDARD_IA!.storedBytes);
    expect(valueOf(m, 'shardgate_lifecycle_actions_total', { action: 'transition' })).toBe(1);
    expect(valueOf(m, 'shardgate_lifecycle_transitioned_bytes_total')).toBe(20_000);
    expect(render(doc as unknown as StatusLike)).toMatch(/by storage class: STANDARD 3 version\(s\), .* \(stored .*\); STANDARD_IA 3 version\(s\)/);

    // Storage whose classed versions were stored before the ledger counted classes: counted once when it opens.
    const instance = catalog.namespace.instances.get([...catalog.namespace.instances.keys()].find((n) => n.includes('media'))!)!;
    const sql = instance.storage.sql;
    const rows = () => sql.exec<{ name: string; value: number }>("SELECT name, value FROM ledger WHERE name LIKE 'class-%' ORDER BY name").toArray();
    const counted = rows();
    expect(counted.length).toBeGreaterThan(0);
    sql.exec("DELETE FROM ledger WHERE name LIKE 'class-%'");
    sql.exec("DELETE FROM state WHERE name = 'class-counts'");
    instance.storage.transactionSync(() => migrate(sql));
    expect(rows()).toEqual(counted);
    instance.storage.transactionSync(() => migrate(sql)); // once: marked
    expect(rows()).toEqual(counted);
  });
});
