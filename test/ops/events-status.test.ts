/**
 * Event notification delivery as the operator reads it (issue 40): the signed status's buckets
 * carry per destination what waits, was delivered, retried, dead-lettered and dropped, and the
 * oldest waiting event's age; the metrics (as the official Prometheus client parses them) and
 * `shardgate status` show the same; the admin API's `events` (what `shardgate events BUCKET`
 * prints) lists the newest events with their delivery state.
 */
import { CreateBucketCommand, PutBucketNotificationConfigurationCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, describe, expect, it } from 'vitest';
import { render } from '../../cli/commands/status.ts';
import { command as eventsCommand } from '../../cli/commands/events.ts';
import { GatewayClient, type StatusLike } from '../../cli/gateway-client.ts';
import { MemoryOpsRecord } from '../../worker/ops/book.ts';
import { OpsFlusher } from '../../worker/ops/flusher.ts';
import { IsolateMeter } from '../../worker/ops/meter.ts';
import { renderMetrics } from '../../worker/ops/prometheus.ts';
import { OpsService } from '../../worker/ops/service.ts';
import { ACCESS_KEY, SECRET } from '../auth/helpers/signers.ts';
import { eventGateway } from '../support/event-gateway.ts';
import { parseMetrics, valueOf } from './helpers.ts';

let g: Awaited<ReturnType<typeof eventGateway>> | undefined;
afterAll(async () => g?.close());

describe('event delivery in the status, the metrics, shardgate status and shardgate events', () => {
  it('shows what waits, what was delivered and retried, and the last events', async () => {
    g = await eventGateway({ backoffMs: 1000 });
    await g.client.send(new CreateBucketCommand({ Bucket: 'photos' }));
    await g.client.send(
      new PutBucketNotificationConfigurationCommand({
        Bucket: 'photos',
        NotificationConfiguration: { QueueConfigurations: [{ Id: 'all', QueueArn: 'arn:aws:sqs:us-east-1:1:hook', Events: ['s3:ObjectCreated:*'] }] },
      }),
    );
    await g.deliver(Date.now()); // the test event: delivered
    g.receiver.mode = 'fail';
    for (const key of ['a.jpg', 'b.jpg', 'c.jpg']) await g.client.send(new PutObjectCommand({ Bucket: 'photos', Key: key, Body: 'x' }));
    await g.deliver(Date.now(), { rounds: 1 }); // one failed attempt

    const meter = new IsolateMeter();
    const record = new MemoryOpsRecord();
    const ops = new OpsService({
      config: {
        backends: g.backends.map((b) => ({ id: b.id, domain: b.domain })),
        policies: { ec: { codec: 'rs', k: 4, m: 2 } },
        defaultPolicy: 'ec',
        coder: { kernel: 'scalar', crc32: 'js' },
        scrubMode: 'heads',
        deployment: { mode: 'local', warnings: [] },
        policyOf: () => ({ name: 'ec', codec: 'rs-cauchy-gf8', k: 4, m: 2, small: { mode: 'inline', threshold: 0, replicas: 1 } }),
      },
      catalog: g.catalog,
      backends: g.backends,
      meter,
      record,
      flusher: new OpsFlusher(meter, (d) => record.record(d), 5000),
      probeEveryMs: 30_000,
    });
    const { doc, totals } = await ops.status({ signed: true, hours: 1, probe: false });
    const photos = doc.buckets!.find((b) => b.bucket === 'photos')!;
    expect(photos.events).toEqual([
      expect.objectContaining({ destination: 'hook', backlog: 3, queued: 4, delivered: 1, retried: 1, deadLettered: 0, dropped: 0, lastError: 'HTTP 503' }),
    ]);
    expect(photos.events![0]!.oldestUndeliveredMs).toBeGreaterThanOrEqual(0);

    const m = await parseMetrics(renderMetrics(doc, totals));
    const labels = { bucket: 'photos', destination: 'hook' };
    expect(valueOf(m, 'shardgate_bucket_events_backlog', labels)).toBe(3);
    expect(valueOf(m, 'shardgate_bucket_events_delivered_total', labels)).toBe(1);
    expect(valueOf(m, 'shardgate_bucket_events_retried_total', labels)).toBe(1);
    expect(valueOf(m, 'shardgate_bucket_events_dropped_total', labels)).toBe(0);
    expect(valueOf(m, 'shardgate_bucket_events_oldest_undelivered_seconds', labels)).toBeGreaterThanOrEqual(0);

    const text = render(doc as unknown as StatusLike);
    expect(text).toMatch(/event notifications per bucket and destination/);
    expect(text).toMatch(/photos\s+hook\s+3\s+1\s+1\s+0\s+0\s+\d+ s\s+HTTP 503/);

    // The admin API `shardgate events` reads.
    const admin = new GatewayClient({ endpoint: g.endpoint, 'access-key-id': ACCESS_KEY, 'secret-access-key': SECRET });
    const answer = (await admin.admin('events', { bucket: 'photos', limit: '2' })) as { destinations: unknown[]; events: { key: string; state: string }[] };
    expect(answer.destinations).toEqual([expect.objectContaining({ destination: 'hook', backlog: 3 })]);
    expect(answer.events.map((e) => [e.key, e.state])).toEqual([
      ['c.jpg', 'queued'],
      ['b.jpg', 'queued'],
    ]);
    const out: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((chunk: string) => (out.push(String(chunk)), true)) as typeof process.stdout.write;
    try {
      const code = await eventsCommand.run(['photos', '--endpoint', g.endpoint, '--access-key-id', ACCESS_KEY, '--secret-access-key', SECRET]);
      expect(code).toBe(0);
    } finally {
      process.stdout.write = write;
    }
    const printed = out.join('');
    expect(printed).toMatch(/photos\s+hook\s+3\s+1\s+1/);
    expect(printed).toMatch(/ObjectCreated:Put\s+c\.jpg\s+hook\s+queued\s+0/);
    expect(printed).toMatch(/s3:TestEvent\s+hook\s+delivered/);
  });
});
