/**
 * Bucket usage and quotas (issue 45; docs/QUOTAS.md) as the operator reads them, over the
 * in-process catalog: the signed status document's buckets carry their version rows, delete
 * markers, the bytes of parts in flight, the quota with what it counts, and a month's storage cost
 * at the configured prices; the metrics have a gauge for each (only buckets with a quota get the
 * quota gauges); `shardgate status` prints them. No call besides the health read the status makes.
 */
import { describe, expect, it } from 'vitest';
import { render } from '../../cli/commands/status.ts';
import type { StatusLike } from '../../cli/gateway-client.ts';
import { MemoryBackend } from '../../backends/memory.ts';
import { setQuota } from '../../worker/catalog/quota-set.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { MemoryOpsRecord } from '../../worker/ops/book.ts';
import { OpsFlusher } from '../../worker/ops/flusher.ts';
import { IsolateMeter } from '../../worker/ops/meter.ts';
import { renderMetrics } from '../../worker/ops/prometheus.ts';
import { OpsService } from '../../worker/ops/service.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { createApp } from '../../worker/app/app.ts';
import { requestLog } from '../../worker/app/request-log.ts';
import { allowAllGate } from '../support/allow-all-gate.ts';
import { testS3Settings } from '../support/memory-store.ts';
import { parseMetrics, valueOf } from './helpers.ts';

const stream = (n: number) => new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(new Uint8Array(n).fill(n % 251)), c.close()) });

describe('bucket usage and quotas in the status, the metrics and shardgate status', () => {
  it('shows versions, markers, parts in flight, the quota and its use, and the storage cost per bucket', async () => {
    const memory = Array.from({ length: 6 }, (_, i) => new MemoryBackend({ id: `b${i}`, domain: `z${i}` }));
    const config = parseConfig({
      backends: memory.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain, prices: 'aws-s3-standard' })),
      policies: { hot: { k: 4, m: 2, blockSize: 4096 } },
      defaultPolicy: 'hot',
    });
    const catalog = localCatalog();
    const store = new EcStore({ catalog, units: new UnitStore(memory), settings: { ...engineSettings(config), minPartSize: 1 } });
    for (const bucket of ['media', 'plain']) await store.createBucket(bucket, { region: 'us-east-1' });
    await store.config.putBucketVersioning('media', 'Enabled');
    const put = (bucket: string, key: string, n: number) =>
      store.putObject(bucket, key, stream(n), { contentLength: n, metadata: { user: {} }, checksum: null, conditions: {} });
    await put('media', 'a', 10_000);
    await put('media', 'a', 12_000);
    await store.deleteObject('media', 'a');
    const up = await store.createMultipartUpload('media', 'big', { metadata: { user: {} }, checksum: null });
    await store.uploadPart('media', 'big', up.uploadId, 1, stream(7_000), { contentLength: 7_000, checksum: null });
    await put('plain', 'p', 5_000);
    await setQuota(catalog, 'media', { bytes: 58_000, objects: 100 }, Date.now());

    const meter = new IsolateMeter();
    const record = new MemoryOpsRecord();
    const flusher = new OpsFlusher(meter, (d) => record.record(d), 5000);
    const price = config.backendPrices.b0!.storagePerGBMonth;
    const ops = new OpsService({
      config: {
        backends: memory.map((b) => ({ id: b.id, domain: b.domain })),
        policies: { hot: { codec: 'rs', k: 4, m: 2 } },
        defaultPolicy: 'hot',
        coder: { kernel: 'scalar', crc32: 'js' },
        scrubMode: 'heads',
        deployment: { mode: 'local', warnings: [] },
        storagePrices: Object.fromEntries(memory.map((b) => [b.id, price])),
      },
      catalog,
      backends: memory,
      meter,
      record,
      flusher,
      probeEveryMs: 30_000,
    });
    // Clients' requests through the S3 front door, counted per bucket (requests, bytes in, egress).
    const app = createApp({
      store,
      config: store.config,
      authenticate: allowAllGate,
      settings: testS3Settings(),
      around: requestLog({ meter, flusher, log: false }),
    });
    expect((await (await app.request('/plain/p')).arrayBuffer()).byteLength).toBe(5_000);
    expect((await app.request('/plain/p', { method: 'HEAD' })).status).toBe(200);
    await flusher.flush();
    const { doc, totals } = await ops.status({ signed: true, hours: 1, probe: false });
    const media = doc.buckets!.find((b) => b.bucket === 'media')!;
    const plain = doc.buckets!.find((b) => b.bucket === 'plain')!;
    expect(media).toMatchObject({
      objects: 2,
      bytes: 22_000,
      versions: 3,
      deleteMarkers: 1,
      multipartBytes: 7_000,
      quota: { bytes: 58_000, objects: 100, usedBytes: 29_000, usedObjects: 2 },
    });
    expect(media.monthlyStorageCost).toBeCloseTo((media.storedBytes / 1024 ** 3) * price, 12);
    expect(plain).toMatchObject({ versions: 1, deleteMarkers: 0, multipartBytes: 0 });
    expect(plain.quota).toBeUndefined();
    expect(plain.clientTraffic).toEqual({ requests: 2, bytesIn: 0, bytesOut: 5_000 });
    expect(media.clientTraffic).toEqual({ requests: 0, bytesIn: 0, bytesOut: 0 });

    const m = await parseMetrics(renderMetrics(doc, totals));
    expect(valueOf(m, 'shardgate_bucket_versions', { bucket: 'media' })).toBe(3);
    expect(valueOf(m, 'shardgate_bucket_delete_markers', { bucket: 'media' })).toBe(1);
    expect(valueOf(m, 'shardgate_bucket_multipart_bytes', { bucket: 'media' })).toBe(7_000);
    expect(valueOf(m, 'shardgate_bucket_quota_bytes', { bucket: 'media' })).toBe(58_000);
    expect(valueOf(m, 'shardgate_bucket_quota_objects', { bucket: 'media' })).toBe(100);
    expect(valueOf(m, 'shardgate_bucket_quota_used_bytes', { bucket: 'media' })).toBe(29_000);
    expect(valueOf(m, 'shardgate_bucket_quota_used_objects', { bucket: 'media' })).toBe(2);
    expect(valueOf(m, 'shardgate_bucket_quota_bytes', { bucket: 'plain' })).toBeUndefined();
    expect(valueOf(m, 'shardgate_bucket_storage_cost_monthly_dollars', { bucket: 'plain' })).toBeCloseTo(plain.monthlyStorageCost!, 12);
    expect(valueOf(m, 'shardgate_bucket_client_requests_total', { bucket: 'plain' })).toBe(2);
    expect(valueOf(m, 'shardgate_bucket_egress_bytes_total', { bucket: 'plain' })).toBe(5_000);

    const text = render(doc as unknown as StatusLike);
    expect(text).toMatch(/media +2 +3 \(1 markers\) +21\.5 KiB \+6\.8 KiB parts .* 28\.3 KiB of 56\.6 KiB \(50%\), 2 of 100 objects \(2%\)/);
    expect(text).toMatch(/plain +1 +1 \(0 markers\) .* 2 +4\.9 KiB +0 /); // REQUESTS, EGRESS, then DEGRADED
  });
});

describe('the usage report', () => {
  it("carries the clients' requests and egress for the bucket from the traffic source, zero for a bucket nobody asked", async () => {
    const { bucketUsageReport } = await import('../../worker/upkeep/bucket-usage.ts');
    const catalog = localCatalog();
    await catalog.insertBucket('seen', 'auto');
    await catalog.insertBucket('quiet', 'auto');
    const since = new Date(1_000);
    const traffic = { since, counts: [], clients: { seen: { requests: 3, bytesIn: 10, bytesOut: 4_000 } } };
    expect(bucketUsageReport('seen', await catalog.bucketUsage('seen'), {}, traffic).clientTraffic).toEqual({
      since: since.toISOString(),
      requests: 3,
      bytesIn: 10,
      egressBytes: 4_000,
    });
    expect(bucketUsageReport('quiet', await catalog.bucketUsage('quiet'), {}, traffic).clientTraffic).toMatchObject({ requests: 0, egressBytes: 0 });
    expect(bucketUsageReport('quiet', await catalog.bucketUsage('quiet'), {}, null).clientTraffic).toBeNull();
  });
});
