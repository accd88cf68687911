/**
 * Delivery of bucket events (worker/catalog/event-delivery.ts over sql-outbox.ts), driven by the
 * test's clock (the alarm is not fired here): a webhook down then up receives every event, in
 * order per key, after backoffs that double; a destination that hangs is cut off by its signal
 * while writes go on; a gateway killed mid-delivery (a new instance over the same storage)
 * delivers again, with the same event id (at least once); dead letters after maxAttempts; the
 * outbox bound, dropping the oldest (counted) or refusing writes with 503 SlowDown before anything
 * is stored; a Queue destination and CloudEvents headers; the counts per destination.
 */
import {
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  HeadObjectCommand,
  PutBucketNotificationConfigurationCommand,
  PutObjectCommand,
  type S3ServiceException,
} from '@aws-sdk/client-s3';
import { createHmac } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { eventGateway, HOOK_SECRET } from '../support/event-gateway.ts';
import { DEV_KEY_RING } from '../support/memory-store.ts';
import { notificationSettings, parseConfig } from '../../worker/config/config.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { flushJournal } from '../../worker/upkeep/journal.ts';
import { restoreFromJournal } from '../../worker/upkeep/journal-restore.ts';

type Gateway = Awaited<ReturnType<typeof eventGateway>>;
const open: Gateway[] = [];
afterEach(async () => {
  for (const g of open.splice(0)) await g.close();
});

async function gateway(settings: Record<string, unknown> = {}, hook: Record<string, unknown> = {}): Promise<Gateway> {
  const g = await eventGateway(settings, hook);
  open.push(g);
  return g;
}

async function announcing(g: Gateway, bucket: string, arn = 'arn:aws:sqs:us-east-1:1:hook'): Promise<void> {
  await g.client.send(new CreateBucketCommand({ Bucket: bucket }));
  await g.client.send(
    new PutBucketNotificationConfigurationCommand({
      Bucket: bucket,
      NotificationConfiguration: { QueueConfigurations: [{ Id: 'all', QueueArn: arn, Events: ['s3:ObjectCreated:*', 's3:ObjectRemoved:*'] }] },
    }),
  );
}

const put = (g: Gateway, bucket: string, key: string, body: string) => g.client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
const statusOf = async (g: Gateway, bucket: string, now = Date.now()) =>
  (await g.catalog.eventStatus(bucket, new Date(now))).find((d) => d.destination === 'hook')!;

describe('event delivery', () => {
  it("never announces the gateway's own keys (an adopted bucket's tombstones: model/reserved-keys.ts)", async () => {
    const g = await gateway();
    await announcing(g, 'reserved');
    await put(g, 'reserved', '.shardgate-adopt/tombstone/gone', '');
    await put(g, 'reserved', 'kept', 'x');
    const events = await g.catalog.listEvents('reserved', 10);
    expect(events.map((e) => e.key).filter((k) => k !== '')).toEqual(['kept']); // '' is the configuration's s3:TestEvent
  });

  it('a webhook down then up receives every event, in order per key, after doubling backoffs; counts say so', async () => {
    const g = await gateway({ backoffMs: 1000, maxBackoffMs: 8000, maxAttempts: 100 });
    await announcing(g, 'down');
    g.receiver.mode = 'fail';
    const writes: [string, string][] = [];
    for (let round = 0; round < 4; round++) for (const key of ['a', 'b', 'c']) writes.push([key, `${key}-${round}`]);
    for (const [key, body] of writes) await put(g, 'down', key, body);
    const t0 = Date.now();
    let now = t0;
    // Down: each run tries the head of the line once; the next try waits 1 s, 2 s, 4 s, 8 s, 8 s.
    const waits: number[] = [];
    for (let i = 0; i < 5; i++) {
      await g.deliver(now, { rounds: 1 });
      const s = await statusOf(g, 'down', now);
      waits.push(s.nextAttemptAt! - now);
      await g.deliver(now + waits[i]! - 1, { rounds: 1 }); // not due yet: nothing is tried
      now += waits[i]!;
    }
    expect(waits).toEqual([1000, 2000, 4000, 8000, 8000]);
    const down = await statusOf(g, 'down', now);
    expect(down).toMatchObject({ backlog: 13, queued: 13, delivered: 0, retried: 5, deadLettered: 0, dropped: 0, lastError: 'HTTP 503' });
    expect(down.oldestUndeliveredMs).toBeGreaterThanOrEqual(now - t0);
    expect(g.receiver.received).toEqual([]);
    // Up again: everything arrives, in commit order, each signed, each key's events in order.
    g.receiver.mode = 'ok';
    await g.deliver(now);
    const records = g.receiver.records();
    expect(records.map((r) => r.s3.object.key)).toEqual(writes.map(([key]) => key));
    for (const key of ['a', 'b', 'c']) {
      const seq = records.filter((r) => r.s3.object.key === key).map((r) => r.s3.object.sequencer);
      expect(seq.every((s, i) => i === 0 || s > seq[i - 1]!)).toBe(true);
    }
    for (const r of g.receiver.received)
      expect(r.headers['x-shardgate-signature']).toBe(`sha256=${createHmac('sha256', HOOK_SECRET).update(r.body).digest('hex')}`);
    expect(await statusOf(g, 'down', now)).toMatchObject({ backlog: 0, queued: 13, delivered: 13, retried: 5, oldestUndeliveredMs: null, lastError: null });
    const events = await g.catalog.listEvents('down', 3);
    expect(events.map((e) => [e.key, e.state])).toEqual([
      ['c', 'delivered'],
      ['b', 'delivered'],
      ['a', 'delivered'],
    ]);
  });

  it("an outbox an earlier release wrote goes on: sequencers above its stored counter, queued as it counted (each release's writes read back)", async () => {
    const g = await gateway({ backoffMs: 1000, maxAttempts: 100 });
    await announcing(g, 'upgrade');
    g.receiver.mode = 'fail';
    for (const key of ['a', 'b']) await put(g, 'upgrade', key, key);
    await g.deliver(Date.now(), { rounds: 1 }); // the head of the line fails once: retried 1
    const sql = g.namespace.instance('bucket:upgrade').storage.sql;
    // What the earlier release left (sql-outbox.ts before 2026-12-05): it wrote the counter table on
    // every event and counted `queued` on the destination's row. A counter far ahead of the clock
    // (as after a burst) must still be passed by the next sequencer.
    const ahead = Date.now() * 1000 + 9_000_000_000;
    sql.exec('INSERT OR REPLACE INTO event_sequencer (id, n) VALUES (1, ?)', ahead);
    sql.exec("UPDATE event_destinations SET queued = 3 WHERE destination = 'hook'"); // test event, a, b
    g.namespace.restart('bucket:upgrade'); // the new release starts over that storage
    await put(g, 'upgrade', 'a', 'again');
    const newest = (await g.catalog.listEvents('upgrade', 1))[0]!;
    expect(Number.parseInt(newest.sequencer.slice(6), 16)).toBeGreaterThan(ahead);
    expect(await statusOf(g, 'upgrade')).toMatchObject({ backlog: 4, queued: 4, delivered: 0, retried: 1, dropped: 0 });
    g.receiver.mode = 'ok';
    await g.deliver(Date.now() + 60_000);
    expect(g.receiver.records().map((r) => r.s3.object.key)).toEqual(['a', 'b', 'a']);
    expect(await statusOf(g, 'upgrade', Date.now() + 60_000)).toMatchObject({ backlog: 0, queued: 4, delivered: 4 });
  });

  it('a catalog lost with events waiting: rebuilt from its journal, it delivers each undelivered event with its id, none delivered before, and those an earlier release queued', async () => {
    const g = await gateway({ backoffMs: 1000, maxAttempts: 100 });
    await announcing(g, 'lost');
    await put(g, 'lost', 'early', 'e');
    await g.deliver(Date.now()); // the test event and 'early': delivered
    g.receiver.mode = 'fail';
    for (const key of ['k1', 'k2']) await put(g, 'lost', key, key);
    await g.deliver(Date.now(), { rounds: 1 }); // k1 refused once: k1 and k2 wait
    expect(await statusOf(g, 'lost')).toMatchObject({ backlog: 2, delivered: 2, retried: 1 });
    // What an earlier release left: its outbox was not journaled (no triggers, no changes noted).
    const sql = g.namespace.instance('bucket:lost').storage.sql;
    for (const op of ['insert', 'update', 'delete']) sql.exec(`DROP TRIGGER journal_event_outbox_${op}`);
    sql.exec("DELETE FROM journal_changes WHERE tbl = 'event_outbox'");
    g.namespace.restart('bucket:lost'); // the new release starts over that storage
    await put(g, 'lost', 'k3', 'k3');
    const units = new UnitStore(g.backends, undefined, { keyRing: DEV_KEY_RING });
    const policy = parseConfig({
      backends: g.backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
      policies: { ec: { k: 4, m: 2 } },
      defaultPolicy: 'ec',
    }).policies.ec!;
    const stored = await flushJournal({ catalog: g.catalog, units, policy }, { deadline: Date.now() + 60_000 });
    expect(stored.failed).toEqual([]);
    const waiting = (await g.catalog.listEvents('lost', 10)).filter((e) => e.state === 'queued');
    expect(waiting.map((e) => e.key).sort()).toEqual(['k1', 'k2', 'k3']);

    // The catalog lost whole (every instance's storage), rebuilt from the journal on the backends.
    g.namespace.instances.clear();
    await g.catalog.insertBucket('lost', 'us-east-1');
    const restored = await restoreFromJournal('lost', g.backends, g.catalog, DEV_KEY_RING);
    expect(restored.doubts).toEqual([]);
    g.receiver.mode = 'ok';
    const before = g.receiver.received.length;
    await g.deliver(Date.now() + 60_000);
    // Each waiting event once, in order, with the id it had ('early' and the test event never again).
    const after = g.receiver.received.slice(before);
    expect(after.map((r) => r.json.Records?.[0]?.s3.object.key)).toEqual(['k1', 'k2', 'k3']);
    expect(after.map((r) => r.headers['x-shardgate-event-id'])).toEqual(['k1', 'k2', 'k3'].map((k) => waiting.find((e) => e.key === k)!.eventId));
    expect(await statusOf(g, 'lost', Date.now() + 60_000)).toMatchObject({ backlog: 0, delivered: 3 });
  });

  it('the commits of coalesceMs go out in one alarm run: the first commit sets the alarm, the next ones leave it', async () => {
    const g = await gateway({ coalesceMs: 250 });
    await announcing(g, 'gather');
    await g.deliver(Date.now()); // the test event
    const storage = g.namespace.instance('bucket:gather').storage;
    await storage.deleteAlarm();
    const before = Date.now();
    await put(g, 'gather', 'k1', 'one');
    const alarm = await storage.getAlarm();
    expect(alarm).toBeGreaterThanOrEqual(before + 250);
    expect(alarm).toBeLessThanOrEqual(Date.now() + 250);
    await put(g, 'gather', 'k2', 'two');
    expect(await storage.getAlarm()).toBe(alarm); // the first commit's alarm serves the second's event
    const received = g.receiver.received.length;
    await g.deliver(alarm!, { rounds: 1 }); // that one run
    expect(g.receiver.received.slice(received).map((r) => r.json.Records?.[0]?.s3.object.key)).toEqual(['k1', 'k2']);
  });

  it('a destination that hangs is cut off by its signal; writes go on meanwhile; the event comes again later', async () => {
    const g = await gateway();
    await announcing(g, 'hang');
    await g.deliver(Date.now()); // the test event
    g.receiver.mode = 'hang';
    await put(g, 'hang', 'k1', 'one');
    const cut = new AbortController();
    const arrived = new Promise<void>((resolve) => (g.receiver.onRequest = resolve));
    const delivery = g.deliver(Date.now(), { signal: cut.signal, rounds: 1 });
    await arrived;
    // The destination holds the POST: a client write is not held by it.
    await put(g, 'hang', 'k2', 'two');
    cut.abort();
    await delivery;
    expect(await statusOf(g, 'hang')).toMatchObject({ backlog: 2, retried: 1, lastError: 'timed out' });
    g.receiver.mode = 'ok';
    g.receiver.onRequest = undefined;
    await g.deliver(Date.now() + 60_000);
    // k1 reached the hung receiver once and again after: the same event id both times.
    expect(g.receiver.records().map((r) => r.s3.object.key)).toEqual(['k1', 'k1', 'k2']);
    const [first, again] = g.receiver.received.filter((r) => r.json.Records?.[0]?.s3.object.key === 'k1');
    expect(again!.headers['x-shardgate-event-id']).toBe(first!.headers['x-shardgate-event-id']);
  });

  it('a gateway killed mid-delivery delivers again on restart, with the same event id (at least once)', async () => {
    const g = await gateway();
    await announcing(g, 'killed');
    await g.deliver(Date.now());
    const before = g.receiver.received.length;
    await put(g, 'killed', 'k', 'x');
    // The receiver takes the POST and answers nothing; the instance is killed meanwhile.
    g.receiver.mode = 'hang';
    const kill = new AbortController();
    const got: string[] = [];
    const arrived = new Promise<void>((resolve) => (g.receiver.onRequest = resolve));
    const delivery = g.deliver(Date.now(), { signal: kill.signal, rounds: 1 }).catch(() => {});
    await arrived;
    const instanceName = [...g.namespace.instances.keys()].find((k) => k.includes('killed'))!;
    const { storage } = g.namespace.instances.get(instanceName)!;
    g.namespace.instances.delete(instanceName);
    kill.abort();
    await delivery;
    // A new instance over the same storage: whatever the old one learned after the POST is lost.
    g.namespace.instance(instanceName, storage);
    g.receiver.mode = 'ok';
    g.receiver.onRequest = () => got.push('again');
    await g.deliver(Date.now() + 60_000);
    const after = g.receiver.received.slice(before);
    // Received before the kill (the gateway never heard back) and again after the restart.
    expect(after.map((r) => r.json.Records?.[0]?.s3.object.key)).toEqual(['k', 'k']);
    expect(got).toEqual(['again']);
    const [entry] = await g.catalog.listEvents('killed', 1);
    expect(after.map((r) => r.headers['x-shardgate-event-id'])).toEqual([entry!.eventId, entry!.eventId]);
    expect(entry!.state).toBe('delivered');
  });

  it('a bucket is not deleted while its events wait (its outbox would go with it); once delivered, it is', async () => {
    const g = await gateway();
    await announcing(g, 'leaving');
    g.receiver.mode = 'fail';
    await put(g, 'leaving', 'k', 'x');
    await g.client.send(new DeleteObjectCommand({ Bucket: 'leaving', Key: 'k' }));
    const refusal = await g.client.send(new DeleteBucketCommand({ Bucket: 'leaving' })).catch((err: S3ServiceException) => err);
    expect(refusal).toMatchObject({ name: 'OperationAborted', $metadata: { httpStatusCode: 409 } });
    g.receiver.mode = 'ok';
    await g.deliver(Date.now() + 3_600_000);
    await g.client.send(new DeleteBucketCommand({ Bucket: 'leaving' }));
    expect(g.receiver.records().map((r) => r.eventName)).toEqual(['ObjectCreated:Put', 'ObjectRemoved:Delete']);
  });

  it('dead-letters an event after maxAttempts and goes on with the next', async () => {
    const g = await gateway({ maxAttempts: 3, backoffMs: 100 });
    await announcing(g, 'dead');
    await g.deliver(Date.now());
    g.receiver.mode = 'fail';
    await put(g, 'dead', 'doomed', 'x');
    let now = Date.now();
    for (let i = 0; i < 3; i++) {
      await g.deliver(now, { rounds: 1 });
      now += 10_000;
    }
    expect(await statusOf(g, 'dead', now)).toMatchObject({ backlog: 0, retried: 2, deadLettered: 1 });
    const [entry] = await g.catalog.listEvents('dead', 1);
    expect(entry).toMatchObject({ key: 'doomed', state: 'dead', attempts: 3, lastError: 'HTTP 503' });
    g.receiver.mode = 'ok';
    await put(g, 'dead', 'next', 'x');
    await g.deliver(now);
    expect(g.receiver.records().map((r) => r.s3.object.key)).toEqual(['next']);
  });

  it('a full outbox drops its oldest events by default and counts them; writes succeed', async () => {
    const g = await gateway({ outboxLimit: 10 });
    await announcing(g, 'full');
    await g.deliver(Date.now());
    g.receiver.mode = 'fail';
    for (let i = 0; i < 15; i++) await put(g, 'full', `k${String(i).padStart(2, '0')}`, 'x');
    expect(await statusOf(g, 'full')).toMatchObject({ backlog: 10, dropped: 5, queued: 16 });
    g.receiver.mode = 'ok';
    await g.deliver(Date.now() + 3_600_000);
    expect(g.receiver.records().map((r) => r.s3.object.key)).toEqual(Array.from({ length: 10 }, (_, i) => `k${String(i + 5).padStart(2, '0')}`));
    // Delivered, the outbox has room for as many again: nothing more is dropped (the bound is
    // checked against the backlog as it is, not against what was written since it was counted).
    g.receiver.mode = 'fail';
    for (let i = 0; i < 10; i++) await put(g, 'full', `again${i}`, 'x');
    expect(await statusOf(g, 'full')).toMatchObject({ backlog: 10, dropped: 5 });
    await put(g, 'full', 'one-more', 'x');
    expect(await statusOf(g, 'full')).toMatchObject({ backlog: 10, dropped: 6 });
  });

  it('strict mode: a full outbox answers 503 SlowDown and stores nothing; room again, writes go on', async () => {
    const g = await gateway({ outboxLimit: 10, whenFull: 'refuse' });
    await announcing(g, 'strict');
    await g.deliver(Date.now());
    g.receiver.mode = 'fail';
    for (let i = 0; i < 10; i++) await put(g, 'strict', `k${i}`, 'x');
    let refusal: S3ServiceException | undefined;
    try {
      await put(g, 'strict', 'refused', 'x');
    } catch (err) {
      refusal = err as S3ServiceException;
    }
    expect(refusal?.name).toBe('SlowDown');
    expect(refusal?.$metadata.httpStatusCode).toBe(503);
    await expect(g.client.send(new HeadObjectCommand({ Bucket: 'strict', Key: 'refused' }))).rejects.toThrow();
    expect(await statusOf(g, 'strict')).toMatchObject({ backlog: 10, dropped: 0 });
    g.receiver.mode = 'ok';
    await g.deliver(Date.now() + 3_600_000);
    await put(g, 'strict', 'accepted', 'x');
    await g.deliver(Date.now() + 3_600_000);
    expect(g.receiver.records().map((r) => r.s3.object.key)).toEqual([...Array.from({ length: 10 }, (_, i) => `k${i}`), 'accepted']);
  });

  it('recordsPerPost batches consecutive events into one signed POST of Records; a refused POST is retried whole, in order', async () => {
    const g = await gateway({ backoffMs: 1000, maxAttempts: 100 }, { recordsPerPost: 10 });
    await announcing(g, 'batched');
    for (let i = 0; i < 23; i++) await put(g, 'batched', `k${i % 5}`, `v${i}`);
    let request = 0;
    g.receiver.failRate = 0.5; // the second POST (the first batch) is refused once
    g.receiver.random = () => (request++ === 1 ? 0 : 1);
    await g.deliver(Date.now(), { rounds: 1 });
    expect(g.receiver.received.map((r) => r.json.Event ?? r.json.Records!.length)).toEqual(['s3:TestEvent']);
    expect((await statusOf(g, 'batched')).backlog).toBe(23);
    await g.deliver(Date.now() + 3_600_000);
    // The s3:TestEvent alone (another shape), then 23 events in POSTs of 10, 10 and 3.
    const [test, ...batches] = g.receiver.received;
    expect(test!.json.Event).toBe('s3:TestEvent');
    expect(batches.map((b) => b.json.Records!.length)).toEqual([10, 10, 3]);
    expect(g.receiver.records().map((r) => r.s3.object.key)).toEqual(Array.from({ length: 23 }, (_, i) => `k${i % 5}`));
    const listed = (await g.catalog.listEvents('batched', 100)).filter((e) => e.key !== '');
    for (const b of batches) {
      const mac = createHmac('sha256', HOOK_SECRET).update(b.body).digest('hex');
      expect(b.headers['x-shardgate-signature']).toBe(`sha256=${mac}`);
      // The ids and sequencers of the records, in the body's order, for de-duplication.
      const sequencers = b.json.Records!.map((r) => r.s3.object.sequencer);
      expect(b.headers['x-shardgate-sequencer']).toBe(sequencers.join(','));
      const ids = b.headers['x-shardgate-event-id']!.split(',');
      expect(ids.map((id) => listed.find((e) => e.eventId === id)?.sequencer)).toEqual(sequencers);
    }
    expect(await statusOf(g, 'batched')).toMatchObject({ delivered: 24, backlog: 0 });
    const both = notificationSettings.safeParse({ destinations: { h: { webhook: 'http://127.0.0.1:1/', cloudEvents: true, recordsPerPost: 2 } } });
    expect(both.error?.issues[0]?.message).toMatch(/cloudEvents.*recordsPerPost/);
  });

  it('a Queue destination gets each event as one message of AWS Records; a CloudEvents webhook gets the ce- headers', async () => {
    const g = await gateway();
    await announcing(g, 'queued', 'arn:aws:sqs:us-east-1:1:q');
    await put(g, 'queued', 'k', 'hello');
    await g.deliver(Date.now());
    expect(g.queued).toEqual([
      expect.objectContaining({ Event: 's3:TestEvent', Bucket: 'queued' }),
      {
        Records: [
          expect.objectContaining({ eventName: 'ObjectCreated:Put', s3: expect.objectContaining({ object: expect.objectContaining({ key: 'k', size: 5 }) }) }),
        ],
      },
    ]);
    expect(await g.catalog.eventStatus('queued', new Date())).toEqual([expect.objectContaining({ destination: 'q', delivered: 2, backlog: 0 })]);
    const ce = await gateway({}, { cloudEvents: true });
    await announcing(ce, 'cloud');
    await put(ce, 'cloud', 'dir/k', 'x');
    await ce.deliver(Date.now());
    const [, created] = ce.receiver.received;
    expect(created!.headers).toMatchObject({
      'ce-specversion': '1.0',
      'ce-type': 'com.amazonaws.s3.ObjectCreated.Put',
      'ce-source': 'shardgate/cloud',
      'ce-subject': 'dir/k',
      'ce-id': created!.headers['x-shardgate-event-id'],
    });
    expect(created!.json.Records?.[0]?.eventName).toBe('ObjectCreated:Put'); // the body stays AWS's
  });
});
