/**
 * The journal writer (upkeep/journal.ts) over the real catalog SQL and the real unit store on six
 * memory backends, sealed as deployments are: runs cut short by their subrequest budget carry on
 * where changes remain; segments read back from the backends' shard files (through the unit store,
 * decrypted) replay to exactly the catalog's journaled tables; with the backends refusing writes a
 * run stores nothing, says so, and loses nothing: the changes wait.
 */
import { describe, expect, it } from 'vitest';
import { FaultyBackend } from '../../backends/faulty.ts';
import { MemoryBackend } from '../../backends/memory.ts';
import { replayJournal } from '../../worker/catalog/journal-replay.ts';
import { JOURNALED } from '../../worker/catalog/sql-journal.ts';
import { journaledRows } from '../support/journaled-rows.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { BUCKET_LIST_INSTANCE, JOURNAL_BUCKET, decodeSegment, segmentKey, type JournalSegment } from '../../worker/format/journal.ts';
import type { CodedUnit } from '../../worker/format/manifest.ts';
import { flushJournal, narrowerCode } from '../../worker/upkeep/journal.ts';
import { DEV_KEY_RING } from '../support/dev-encryption.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { readBytes } from '../support/read-bytes.ts';

function setup() {
  const catalog = localCatalog();
  const backends = Array.from({ length: 6 }, (_, i) => new FaultyBackend(new MemoryBackend({ id: `mem-${i}`, domain: `zone-${i}` })));
  const config = parseConfig({
    backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
    policies: { ec: { k: 4, m: 2, blockSize: 65536 } },
    defaultPolicy: 'ec',
  });
  const units = new UnitStore(backends, undefined, { keyRing: DEV_KEY_RING });
  const store = new EcStore({ catalog, units, settings: engineSettings(config) });
  const policy = config.policies.ec!;
  const put = (bucket: string, key: string, n: number) => {
    const b = new Uint8Array(n).fill(n & 0xff);
    return store.putObject(bucket, key, new ReadableStream({ start: (c) => (c.enqueue(b), c.close()) }), {
      contentLength: n,
      metadata: { user: {}, contentType: 'application/x-test' },
      checksum: null,
      conditions: {},
    } as never);
  };
  const run = (maxCalls?: number) => flushJournal({ catalog, units, policy }, { deadline: Date.now() + 60_000, maxCalls });
  /** Every stored segment, read back from the backends through the unit store (as a rescue reads it). */
  const storedSegments = async (): Promise<JournalSegment[]> => {
    const out: JournalSegment[] = [];
    for (const instance of [BUCKET_LIST_INSTANCE, ...(await catalog.listBucketRecords()).map((b) => b.name)]) {
      const name = instance === BUCKET_LIST_INSTANCE ? instance : `bucket:${instance}`;
      const files = catalog.namespace.instance(name).storage.sql.exec<{ segment: number; units: string }>('SELECT segment, units FROM journal_files').toArray();
      for (const f of files) {
        const list = JSON.parse(f.units) as CodedUnit[];
        const size = list.reduce((n, u) => n + u.size, 0);
        const bytes = await readBytes(await units.open(JOURNAL_BUCKET, segmentKey(instance, f.segment), { kind: 'coded', units: list }, 0, size - 1));
        out.push(decodeSegment(bytes));
      }
    }
    return out;
  };
  const tables = (instance: string) => {
    const sql = catalog.namespace.instance(instance === BUCKET_LIST_INSTANCE ? instance : `bucket:${instance}`).storage.sql;
    return Object.fromEntries(Object.keys(JOURNALED).map((t) => [t, new Set(journaledRows(sql, t).map((r) => JSON.stringify(r)))]));
  };
  const replayed = (segments: JournalSegment[], instance: string) => {
    const image = replayJournal(segments).get(instance)!;
    return Object.fromEntries(Object.keys(JOURNALED).map((t) => [t, new Set([...(image.tables.get(t)?.values() ?? [])].map((r) => JSON.stringify(r)))]));
  };
  return { catalog, backends, put, run, storedSegments, tables, replayed };
}

describe('the journal writer', () => {
  it('runs cut short by their subrequests carry on; the stored segments replay to the catalog', async () => {
    const s = setup();
    const names = ['a', 'b', 'c', 'd', 'e'];
    for (const n of names) {
      await s.catalog.insertBucket(n, 'us-east-1');
      for (let i = 0; i < 5; i++) await s.put(n, `k${i}`, 100 + i * 5000);
    }
    // A segment costs at least 5 subrequests (its take, 3 small-object replicas or 6 shards, its
    // acknowledgement): a run of 10 stores at most 2, so the six instances' take three runs or more.
    const first = await s.run(10);
    expect(first.unfinished).toBe(true);
    let runs = 1;
    for (let r = first; r.unfinished; runs++) {
      expect(r.segments).toBeLessThanOrEqual(2);
      r = await s.run(10);
    }
    expect(runs).toBeGreaterThanOrEqual(3);
    const last = await s.run();
    expect(last).toMatchObject({ segments: 0, failed: [], unfinished: false }); // nothing left due
    const segments = await s.storedSegments();
    for (const instance of [BUCKET_LIST_INSTANCE, ...names]) expect(s.replayed(segments, instance), instance).toEqual(s.tables(instance));
    // Sealed: no shard file of the journal names a bucket or the journal.
    const keys = (await Promise.all(s.backends.map(async (b) => (await b.list('')).entries.map((e) => e.key)))).flat();
    expect(keys.filter((k) => k.includes(JOURNAL_BUCKET) || k.includes('/a/'))).toEqual([]);
  });

  it('with the backends refusing writes a run stores nothing and says so; the changes wait and go with the next run', async () => {
    const s = setup();
    await s.catalog.insertBucket('a', 'us-east-1');
    await s.put('a', 'k', 10);
    expect((await s.run()).failed).toEqual([]);
    await s.put('a', 'k2', 20);
    // Five of six down: no write of any kind reaches its quorum (a small segment is stored as
    // replicas with a majority quorum, so two down would not stop it).
    for (const b of s.backends.slice(1)) b.goOffline();
    const refused = await s.run();
    expect(refused.failed.map((f) => f.instance)).toEqual(['a']);
    expect((await s.catalog.journalStatus('a'))!.pending).toBeGreaterThan(0);
    for (const b of s.backends) b.goOnline();
    const after = await s.run();
    expect(after.failed).toEqual([]);
    expect((await s.catalog.journalStatus('a'))!.pending).toBe(0);
    expect(s.replayed(await s.storedSegments(), 'a')).toEqual(s.tables('a'));
  });

  it('with 2 of 6 backends down a large segment is still stored, at 2+2 over the four left, and replays to the catalog', async () => {
    const s = setup();
    await s.catalog.insertBucket('a', 'us-east-1');
    for (let i = 0; i < 40; i++) await s.put('a', `key-${i}-${'x'.repeat(100)}`, 10 + i);
    s.backends[1]!.goOffline();
    s.backends[4]!.goOffline();
    const run = await s.run();
    expect(run.failed).toEqual([]);
    expect((await s.catalog.journalStatus('a'))!.pending).toBe(0);
    const sql = s.catalog.namespace.instance('bucket:a').storage.sql;
    const units = sql
      .exec<{ units: string }>('SELECT units FROM journal_files')
      .toArray()
      .flatMap((f) => JSON.parse(f.units) as CodedUnit[]);
    const large = units.filter((u) => u.codec !== 'replica');
    expect(large.length).toBeGreaterThan(0); // the segment is larger than the small-object threshold
    for (const u of large) {
      expect([u.k, u.m, u.missing]).toEqual([2, 2, []]);
      expect(u.placement).not.toContain('mem-1');
      expect(u.placement).not.toContain('mem-4');
    }
    expect(s.replayed(await s.storedSegments(), 'a')).toEqual(s.tables('a'));
  });

  it("the narrower code: as wide as the backends answering allow, the policy's parity where it fits, never below one parity shard", () => {
    const policy = parseConfig({
      backends: Array.from({ length: 6 }, (_, i) => ({ id: `b${i}`, kind: 'memory', domain: `z${i}` })),
      policies: { ec: { k: 4, m: 2, blockSize: 4096 } },
      defaultPolicy: 'ec',
    }).policies.ec!;
    const code = (reachable: number) => {
      const c = narrowerCode(policy, reachable);
      return c && `${c.k}+${c.m} q${c.writeQuorum} r${c.small.replicas}`;
    };
    expect([6, 5, 4, 3, 2, 1, 0].map(code)).toEqual(['4+2 q5 r3', '3+2 q4 r3', '2+2 q3 r3', '1+2 q2 r3', '1+1 q2 r2', null, null]);
  });
});
