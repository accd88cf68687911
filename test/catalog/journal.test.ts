/**
 * The catalog journal over the real catalog SQL (in process: local-catalog.ts): whatever the
 * S3 operations did, replaying the stored segments gives back exactly the journaled tables, in
 * every instance; across segment limits, retried and overlapping takes, and new generations
 * (whose completion hands older segments to the garbage). Every table of the schema is either
 * journaled or named as left out with a reason.
 */
import { describe, expect, it } from 'vitest';
import { BUCKET_LIST_INSTANCE, JOURNAL_BUCKET, JOURNAL_FORMAT, decodeSegment, encodeSegment, type JournalSegment } from '../../worker/format/journal.ts';
import { SCHEMA_VERSION } from '../../worker/catalog/sql-schema.ts';
import type { CodedUnit } from '../../worker/format/manifest.ts';
import { bucketImages, replayJournal } from '../../worker/catalog/journal-replay.ts';
import { JOURNALED, NOT_JOURNALED, type JournalTake } from '../../worker/catalog/sql-journal.ts';
import { LAZY_TABLES } from '../../worker/catalog/journal-schema.ts';
import { journaledRows } from '../support/journaled-rows.ts';
import type { GarbageUnits } from '../../worker/catalog/types.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { DEV_KEY_RING, memoryEcStore } from '../support/memory-store.ts';
import { KmsKeys } from '../../worker/engine/kms-keys.ts';
import { materialLabel, type KmsKeyRecord } from '../../worker/model/kms-key.ts';

const body = (n: number, seed = 1) => {
  const b = new Uint8Array(n).map((_, i) => (i * 31 + seed) & 0xff);
  return { stream: new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(b), c.close()) }), size: n };
};

function setup() {
  const catalog = localCatalog({ garbageGraceMs: 0 });
  const { store } = memoryEcStore(catalog, { sealed: false });
  const put = async (bucket: string, key: string, n: number, seed = 1) => {
    const b = body(n, seed);
    return store.putObject(bucket, key, b.stream, {
      contentLength: b.size,
      metadata: { user: {}, contentType: 'application/x-test' },
      checksum: null,
      conditions: {},
    } as never);
  };
  /** What each stored segment was, as the backends would hold it (bytes decoded again). */
  const stored: JournalSegment[] = [];
  let fakeUnit = 0;
  const unitFor = (): CodedUnit[] => [
    {
      unitId: `journal-${++fakeUnit}`,
      codec: 'replica',
      size: 1,
      k: 1,
      m: 0,
      blockSize: 1,
      placement: ['mem-0'],
      headerLens: [1],
      shardDigests: [],
      missing: [],
      md5: '',
    },
  ];
  /** One journal run as upkeep/journal.ts makes it, the store step replaced by keeping the segment's bytes. */
  const flush = async (maxBytes = 4 << 20, onTake?: (take: JournalTake) => Promise<void>) => {
    for (const instance of await catalog.journalInstances()) {
      for (;;) {
        const take = await catalog.takeJournal(instance, new Date(), maxBytes);
        if (!take) break;
        await onTake?.(take);
        stored.push(decodeSegment(encodeSegment(take.segment)));
        await catalog.journalWritten(instance, take, unitFor(), new Date());
      }
    }
  };
  /** The journaled rows of an instance as the catalog holds them now. */
  const tablesOf = (instance: string) => {
    const sql = catalog.namespace.instance(instance === BUCKET_LIST_INSTANCE ? BUCKET_LIST_INSTANCE : `bucket:${instance}`).storage.sql;
    const out: Record<string, Record<string, unknown>[]> = {};
    for (const table of Object.keys(JOURNALED)) {
      const list = journaledRows(sql, table);
      if (list.length) out[table] = list;
    }
    return out;
  };
  const imageOf = (instance: string) => {
    const image = replayJournal(stored).get(instance)!;
    const out: Record<string, Record<string, unknown>[]> = {};
    for (const [table, pk] of Object.entries(JOURNALED)) {
      const list = [...(image.tables.get(table)?.values() ?? [])];
      list.sort((a, b) => {
        for (const c of pk) if (a[c] !== b[c]) return (a[c] as string | number) < (b[c] as string | number) ? -1 : 1;
        return 0;
      });
      if (list.length) out[table] = list;
    }
    return out;
  };
  return { catalog, store, put, flush, stored, tablesOf, imageOf };
}

describe('the catalog journal', () => {
  it('every table of the schema is journaled or left out with a reason', async () => {
    const { catalog, put } = setup();
    await catalog.insertBucket('b', 'us-east-1');
    await put('b', 'k', 10);
    const sql = catalog.namespace.instance('bucket:b').storage.sql;
    const tables = sql
      .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
      .toArray()
      .map((r) => r.name);
    for (const t of tables) expect(t in JOURNALED || t in NOT_JOURNALED, `table ${t} is in neither JOURNALED nor NOT_JOURNALED`).toBe(true);
    // Every journaled table exists, but those made on first use (the outbox, with a bucket's first event rule).
    expect(Object.keys(JOURNALED).filter((t) => !tables.includes(t))).toEqual([...LAZY_TABLES]);
  });

  it('replaying the segments gives back every journaled row, through puts, overwrites, versions, deletes and settings', async () => {
    const { catalog, store, put, flush, stored, tablesOf, imageOf } = setup();
    await catalog.insertBucket('plain', 'us-east-1');
    await catalog.insertBucket('kept', 'eu-west-1');
    await put('plain', 'tiny', 100); // inline
    await put('plain', 'coded', 300_000);
    await flush();
    expect(
      stored
        .filter((s) => s.completes)
        .map((s) => s.instance)
        .sort(),
    ).toEqual([BUCKET_LIST_INSTANCE, 'plain', 'kept'].sort());
    await catalog.setVersioning('kept', 'Enabled');
    for (let i = 0; i < 3; i++) await put('kept', 'doc', 200_000 + i, i);
    await put('kept', 'small', 50);
    await store.deleteObject('kept', 'small');
    await catalog.setBucketCors('kept', [
      { allowedOrigins: ['https://a.example'], allowedMethods: ['GET'], allowedHeaders: [], exposeHeaders: [], maxAgeSeconds: null } as never,
    ]);
    await catalog.setBucketTagging('plain', [{ key: 'team', value: 'blue' }]);
    const policy = JSON.stringify({ Statement: { Effect: 'Deny', Principal: '*', Action: 's3:DeleteObject', Resource: 'arn:aws:s3:::kept/*' } });
    await catalog.setBucketPolicy('kept', policy);
    const block = { blockPublicAcls: true, ignorePublicAcls: false, blockPublicPolicy: true, restrictPublicBuckets: false };
    await catalog.setBucketPublicAccessBlock('kept', JSON.stringify(block));
    await put('plain', 'coded', 1000); // overwrite: the old units go to the garbage
    await store.deleteObject('plain', 'tiny');
    // A named KMS key (SSE-KMS): the key table is state rows of the bucket list's instance.
    const kms = new KmsKeys({ catalog, ring: DEV_KEY_RING, region: 'us-east-1' });
    await kms.create('journaled-key');
    await kms.rotate('journaled-key');
    await flush();
    for (const instance of [BUCKET_LIST_INSTANCE, 'plain', 'kept']) expect(imageOf(instance), instance).toEqual(tablesOf(instance));
    // The key table survives in the bucket list's journal: each version's material opens there with the gateway's key, as it does live.
    const keyRow = [...replayJournal(stored).get(BUCKET_LIST_INSTANCE)!.tables.get('state')!.values()].find((r) => r.name === 'kms-key/journaled-key')!;
    const journaledKey = JSON.parse(String(keyRow.value)) as KmsKeyRecord;
    expect(journaledKey.versions.map((v) => v.version)).toEqual([1, 2]);
    for (const v of journaledKey.versions) {
      const label = materialLabel('journaled-key', v.version);
      const live = (await kms.get('journaled-key'))!.versions.find((l) => l.version === v.version)!;
      expect(Buffer.from(await DEV_KEY_RING.openSecret(v, label))).toEqual(Buffer.from(await DEV_KEY_RING.openSecret(live, label)));
    }

    const { buckets } = bucketImages(replayJournal(stored));
    expect(buckets.map((b) => b.name)).toEqual(['kept', 'plain']);
    const kept = buckets[0]!;
    expect(kept.settings.versioning).toBe('Enabled');
    expect(kept.settings.cors).toBeTruthy();
    expect(kept.settings.policy).toEqual(JSON.parse(policy)); // the bucket policy's state row is journaled with the rest
    expect(kept.settings['public-access-block']).toEqual(block); // and the public access block's
    expect(kept.versions.filter((v) => v.key === 'doc').length).toBe(3);
    expect(kept.versions.find((v) => v.key === 'small' && v.deleteMarker)).toBeTruthy();
    expect(kept.versions.filter((v) => v.current).map((v) => v.key)).toEqual(['doc']);
    const plain = buckets[1]!;
    expect(plain.versions.filter((v) => v.current).map((v) => [v.key, v.manifest!.size])).toEqual([['coded', 1000]]);
    // The overwritten units are known (held for deletion): a rescue never brings them back.
    const garbageUnits = catalog.namespace
      .instance('bucket:plain')
      .storage.sql.exec<{ entry: string }>('SELECT entry FROM garbage')
      .toArray()
      .flatMap((r) => (JSON.parse(r.entry) as GarbageUnits).units.map((u) => u.unitId));
    expect(garbageUnits.length).toBeGreaterThan(0);
    for (const id of garbageUnits) expect(plain.knownUnits.has(id)).toBe(true);
  });

  it('small segments, a take never acknowledged and two overlapping takes still replay exactly', async () => {
    const { catalog, put, flush, stored, tablesOf, imageOf } = setup();
    await catalog.insertBucket('b', 'us-east-1');
    for (let i = 0; i < 40; i++) await put('b', `k${String(i).padStart(2, '0')}`, 30 + i);
    // A take whose write fails: never acknowledged, its rows are taken again.
    const lost = await catalog.takeJournal('b', new Date(), 2000);
    expect(lost!.segment.records.length).toBeGreaterThan(0);
    await flush(2000);
    expect(stored.filter((s) => s.instance === 'b').length).toBeGreaterThan(3);
    expect(imageOf('b')).toEqual(tablesOf('b'));
    // Two takes before either is acknowledged (overlapping cron runs), with a change in between.
    await put('b', 'k00', 5, 9);
    const first = await catalog.takeJournal('b', new Date(), 1 << 20);
    await put('b', 'k01', 6, 9);
    await flush(1 << 20);
    stored.push(first!.segment);
    await catalog.journalWritten('b', first!, [], new Date());
    // The stale first segment has the lower number: replayed before the newer one, it cannot win.
    expect(first!.segment.segment).toBeLessThan(stored.at(-2)!.segment);
    expect(imageOf('b')).toEqual(tablesOf('b'));
    expect(await catalog.takeJournal('b', new Date(), 1 << 20)).toBeNull();
  });

  it('a new generation starts once changes outweigh the dump; its completion sends older segments to the garbage', async () => {
    const { catalog, put, flush, stored, tablesOf, imageOf } = setup();
    await catalog.insertBucket('b', 'us-east-1');
    for (let i = 0; i < 20; i++) {
      await put('b', 'hot', 10 + i, i);
      await flush();
    }
    const generations = new Set(stored.filter((s) => s.instance === 'b').map((s) => s.generation));
    expect(generations.size).toBeGreaterThan(1);
    const image = replayJournal(stored).get('b')!;
    expect(image.complete).toBe(true);
    expect(image.applied).toBeLessThan(stored.filter((s) => s.instance === 'b').length);
    expect(imageOf('b')).toEqual(tablesOf('b'));
    // Only the segments of the newest complete generation on remain; the rest are garbage of the journal's bucket.
    const sql = catalog.namespace.instance('bucket:b').storage.sql;
    const garbage = sql
      .exec<{ entry: string }>('SELECT entry FROM garbage')
      .toArray()
      .map((r) => JSON.parse(r.entry) as GarbageUnits)
      .filter((g) => g.bucket === JOURNAL_BUCKET);
    expect(garbage.flatMap((g) => g.units).length).toBeGreaterThan(0);
    const kept = sql
      .exec<{ segment: number }>('SELECT segment FROM journal_files ORDER BY segment')
      .toArray()
      .map((r) => r.segment);
    expect(Math.min(...kept)).toBe(image.newest - image.applied + 1);
  });

  it("a deleted bucket leaves the bucket list, and its segments go to the garbage with it; one created after the list's last segment is there", async () => {
    const { catalog, put, store, flush, stored } = setup();
    await catalog.insertBucket('gone', 'us-east-1');
    await put('gone', 'x', 10);
    await flush();
    await store.deleteObject('gone', 'x');
    await catalog.removeBucket('gone');
    await flush();
    const { buckets, unlisted } = bucketImages(replayJournal(stored));
    expect(buckets.map((b) => b.name)).toEqual([]);
    expect(unlisted).toEqual(['gone']);
    // A bucket created after the bucket list's last segment, its own instance journaled: it exists.
    await new Promise((r) => setTimeout(r, 5));
    await catalog.insertBucket('late', 'us-east-1');
    await put('late', 'y', 10);
    for (let take; (take = await catalog.takeJournal('late', new Date(), 1 << 20)); ) {
      stored.push(take.segment);
      await catalog.journalWritten('late', take, [], new Date());
    }
    expect(bucketImages(replayJournal(stored)).buckets.map((b) => b.name)).toEqual(['late']);
    const orphan = catalog.namespace
      .instance(BUCKET_LIST_INSTANCE)
      .storage.sql.exec<{ entry: string }>('SELECT entry FROM garbage')
      .toArray()
      .map((r) => JSON.parse(r.entry) as GarbageUnits);
    expect(orphan.some((g) => g.bucket === JOURNAL_BUCKET && g.units.length > 0)).toBe(true);
  });
});

/** An undelivered event_outbox row as the journal records it, `fields` over a webhook PUT event's. */
function outboxRow(fields: { id: number; event_id: string; key: string; sequencer?: string }): Record<string, string | number | null> {
  return {
    destination: 'hook',
    event_name: 'ObjectCreated:Put',
    sequencer: '1',
    body: '{}',
    created: fields.id,
    attempts: 0,
    state: 'queued',
    done_at: null,
    last_error: null,
    ...fields,
  };
}

describe("a split bucket's journals folded into one image", () => {
  it("keeps every partition's undelivered events, numbered after the bucket's own, in each partition's order", () => {
    const segment = (instance: string, records: JournalSegment['records']): JournalSegment => ({
      format: JOURNAL_FORMAT,
      schema: SCHEMA_VERSION,
      instance,
      segment: 1,
      generation: 1,
      generationFirst: 1,
      completes: true,
      previous: 0,
      takenAt: new Date(0).toISOString(),
      records,
    });
    // Each partition numbers its events from 1: the same ids, different events.
    const event = (id: number, key: string) => ({ t: 'event_outbox', k: [id], r: outboxRow({ id, event_id: `e-${key}`, key }) });
    const image = replayJournal([
      segment('split', [{ t: 'buckets', k: ['split'], r: { name: 'split', region: 'us-east-1', created: 0 } }, event(1, 'a'), event(2, 'b')]),
      segment('split/p1', [event(2, 'y'), event(1, 'x')]),
    ]).get('split')!;
    const events = [...image.tables.get('event_outbox')!.values()].map((r) => [r.id, r.key]);
    expect(events).toEqual([
      [1, 'a'],
      [2, 'b'],
      [3, 'x'],
      [4, 'y'],
    ]);
  });
});

describe('events restored from a journal', () => {
  it("are queued in sequencer order, so a key's events keep their order whichever partition's journal held them", async () => {
    const catalog = localCatalog({ garbageGraceMs: 0 });
    await catalog.insertBucket('restored', 'us-east-1');
    // The key's first event was in the old partition (epoch 1) with the higher folded id; its second in the new one (epoch 2).
    const event = (id: number, sequencer: string, eventId: string) => ({ t: 'event_outbox', r: outboxRow({ id, event_id: eventId, key: 'k', sequencer }) });
    const rows = [event(1, '00000200000000000001', 'second'), event(2, '00000100000000000009', 'first')];
    expect(await catalog.importJournal('restored', { rows, first: true })).toBe(2);
    // Imported again (a restore redone): nothing queued twice.
    expect(await catalog.importJournal('restored', { rows, first: false, merge: true })).toBe(0);
    const queued = (await catalog.listEvents('restored', 10)).reverse(); // oldest first
    expect(queued.map((e) => e.eventId)).toEqual(['first', 'second']);
  });
});
