/**
 * The journal's upkeep (upkeep/journal-upkeep.ts) over the real catalog SQL and unit store on six
 * memory backends, sealed: a wiped backend's journal shards are found and rebuilt (no segment is
 * left at exactly k); segments written at a narrower code while 2 of 6 backends were down are
 * rewritten at the policy's code once they are back; a draining backend ends with no journal
 * file; the status's counts of the journal's redundancy follow. Each time, what the backends hold
 * still replays to the catalog's tables.
 */
import { describe, expect, it } from 'vitest';
import { FaultyBackend } from '../../backends/faulty.ts';
import { MemoryBackend } from '../../backends/memory.ts';
import { replayJournal } from '../../worker/catalog/journal-replay.ts';
import { journalRedundancy, JOURNALED } from '../../worker/catalog/sql-journal.ts';
import { journaledRows } from '../support/journaled-rows.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { BUCKET_LIST_INSTANCE, decodeSegment, JOURNAL_BUCKET, segmentKey, type JournalSegment } from '../../worker/format/journal.ts';
import { MemoryOpsRecord } from '../../worker/ops/book.ts';
import { OpsFlusher } from '../../worker/ops/flusher.ts';
import { IsolateMeter } from '../../worker/ops/meter.ts';
import { OpsService } from '../../worker/ops/service.ts';
import type { CodedUnit } from '../../worker/format/manifest.ts';
import { collectGarbage } from '../../worker/upkeep/collector.ts';
import { drainProgress } from '../../worker/upkeep/drain-progress.ts';
import { flushJournal } from '../../worker/upkeep/journal.ts';
import { journalUpkeep } from '../../worker/upkeep/journal-upkeep.ts';
import { DEV_KEY_RING } from '../support/dev-encryption.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { readBytes } from '../support/read-bytes.ts';

function setup(placeOn?: string[]) {
  const catalog = localCatalog({ garbageGraceMs: 0 });
  const backends = Array.from({ length: 6 }, (_, i) => new FaultyBackend(new MemoryBackend({ id: `mem-${i}`, domain: `zone-${i}` })));
  const config = parseConfig({
    backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
    policies: { ec: { k: 4, m: 2, blockSize: 4096 } },
    defaultPolicy: 'ec',
  });
  const units = new UnitStore(backends, undefined, { keyRing: DEV_KEY_RING, ...(placeOn ? { placeOn } : {}) });
  const store = new EcStore({ catalog, units, settings: engineSettings(config) });
  const policy = config.policies.ec!;
  const fill = async (bucket: string, n: number) => {
    await catalog.insertBucket(bucket, 'us-east-1');
    for (let i = 0; i < n; i++) {
      const b = new Uint8Array(10 + i).fill(i);
      await store.putObject(bucket, `key-${i}-${'x'.repeat(120)}`, new ReadableStream({ start: (c) => (c.enqueue(b), c.close()) }), {
        contentLength: b.length,
        metadata: { user: {} },
        checksum: null,
        conditions: {},
      });
    }
  };
  const journal = () => flushJournal({ catalog, units, policy }, { deadline: Date.now() + 60_000 });
  const upkeep = (mode: 'heads' | 'verify' = 'heads') => journalUpkeep({ catalog, units, policy }, { mode, maxCalls: 10_000 });
  const files = (instance: string) => catalog.journalFiles(instance);
  const allUnits = async (instance: string) => (await files(instance)).flatMap((f) => f.units);
  const stored = async (instance: string): Promise<JournalSegment[]> => {
    const reader = new UnitStore(backends, undefined, { keyRing: DEV_KEY_RING });
    const out: JournalSegment[] = [];
    for (const f of await files(instance)) {
      const size = f.units.reduce((n, u) => n + u.size, 0);
      out.push(
        decodeSegment(await readBytes(await reader.open(JOURNAL_BUCKET, segmentKey(instance, f.segment), { kind: 'coded', units: f.units }, 0, size - 1))),
      );
    }
    return out;
  };
  /** What the backends hold, once the journal has stored the catalog's latest changes, replays to the catalog's tables. */
  const replaysToCatalog = async (instance: string) => {
    expect((await journal()).failed).toEqual([]);
    const image = replayJournal(await stored(instance)).get(instance)!;
    const sql = catalog.namespace.instance(`bucket:${instance}`).storage.sql;
    for (const t of Object.keys(JOURNALED)) {
      const rows = journaledRows(sql, t).map((r) => JSON.stringify(r));
      expect(new Set([...(image.tables.get(t)?.values() ?? [])].map((r) => JSON.stringify(r))), t).toEqual(new Set(rows));
    }
  };
  return { catalog, backends, fill, journal, upkeep, files, allUnits, replaysToCatalog, units };
}

const shardFilesOn = async (b: { list(p: string, c?: string): Promise<{ entries: { key: string }[]; cursor?: string }> }) => (await b.list('')).entries.length;

describe("the journal's upkeep", () => {
  it('a wiped backend: its journal shards are found and rebuilt, none left at exactly k', async () => {
    const s = setup();
    await s.fill('a', 30);
    expect((await s.journal()).failed).toEqual([]);
    const journalOnly = await shardFilesOn(s.backends[2]!);
    // The backend's disk is replaced: every file on it gone (data and journal).
    for (const e of (await s.backends[2]!.list('')).entries) await s.backends[2]!.delete(e.key);
    const r = await s.upkeep();
    expect(r.damaged).toBeGreaterThan(0);
    expect(r.repaired).toBe(r.damaged);
    expect(r.failed).toEqual([]);
    const status = (await s.catalog.journalStatus('a'))!.redundancy!;
    expect(status).toMatchObject({ atRisk: 0, lost: 0 });
    expect((await s.allUnits('a')).every((u) => u.missing.length === 0)).toBe(true);
    expect(await shardFilesOn(s.backends[2]!)).toBeGreaterThan(0);
    expect(await shardFilesOn(s.backends[2]!)).toBeLessThanOrEqual(journalOnly);
    // 'verify' reads every shard whole: nothing more to find.
    expect(await s.upkeep('verify')).toMatchObject({ damaged: 0, failed: [] });
    await s.replaysToCatalog('a');
  });

  it('segments written at 2+2 while 2 of 6 were down are re-striped to 4+2 once they are back; the old units go to the garbage', async () => {
    const s = setup();
    await s.fill('a', 30);
    s.backends[1]!.goOffline();
    s.backends[4]!.goOffline();
    expect((await s.journal()).failed).toEqual([]);
    expect(Object.keys((await s.catalog.journalStatus('a'))!.redundancy!.byCode)).toContain('2+2');
    // Still down: the rewrite cannot reach 4+2's quorum and waits.
    const waiting = await s.upkeep();
    expect(waiting.restriped).toBe(0);
    expect(waiting.failed.length).toBeGreaterThan(0);
    s.backends[1]!.goOnline();
    s.backends[4]!.goOnline();
    const r = await s.upkeep();
    expect(r.restriped).toBeGreaterThan(0);
    expect(r.failed).toEqual([]);
    const codes = (await s.allUnits('a')).filter((u) => u.codec !== 'replica').map((u) => `${u.k}+${u.m}`);
    expect(new Set(codes)).toEqual(new Set(['4+2']));
    await s.replaysToCatalog('a');
    // The 2+2 units were queued for deletion: the collector removes them.
    expect(await collectGarbage(s.catalog, s.units.byId, new Date(Date.now() + 1000))).toBeGreaterThan(0);
    await s.replaysToCatalog('a');
  });

  it('a draining backend ends with no journal file: segments on it are rewritten elsewhere', async () => {
    const before = setup();
    await before.fill('a', 30);
    expect((await before.journal()).failed).toEqual([]);
    const onIt = (units: CodedUnit[]) => units.filter((u) => u.placement.includes('mem-5')).length;
    // The same catalog and backends, mem-5 now draining: it takes no new shard.
    const draining = new UnitStore(before.backends, undefined, { keyRing: DEV_KEY_RING, placeOn: ['mem-0', 'mem-1', 'mem-2', 'mem-3', 'mem-4'] });
    const units = await before.allUnits('a');
    expect(onIt(units)).toBeGreaterThan(0);
    const leaving = [{ id: 'mem-5', state: 'draining' }];
    expect((await drainProgress(before.catalog, leaving))[0]!.journalShards).toBeGreaterThan(0);
    // (5 placeable backends cannot take a 4+2 unit: each segment goes at 3+2 there — narrower than the policy until mem-5 is replaced.)
    const policy = parseConfig({
      backends: before.backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
      policies: { ec: { k: 3, m: 2, blockSize: 4096 } },
      defaultPolicy: 'ec',
    }).policies.ec!;
    const r = await journalUpkeep({ catalog: before.catalog, units: draining, policy }, { mode: 'heads', maxCalls: 10_000 });
    expect(r.moved + r.restriped).toBeGreaterThan(0);
    expect(r.failed).toEqual([]);
    expect(onIt(await before.allUnits('a'))).toBe(0);
    expect((await before.catalog.journalStatus('a'))!.redundancy!.shardsByBackend['mem-5']).toBeUndefined();
    expect((await drainProgress(before.catalog, leaving))[0]).toMatchObject({ left: { shards: 0 }, journalShards: 0 });
    await collectGarbage(before.catalog, before.units.byId, new Date(Date.now() + 1000));
    const left = (await before.backends[5]!.list('')).entries.filter((e) => e.key.includes('/'));
    const journalUnits = new Set((await before.allUnits('a')).map((u) => u.unitId));
    expect(left.filter((e) => [...journalUnits].some((id) => e.key.includes(id)))).toEqual([]);
    await before.replaysToCatalog('a');
  });

  it("the status counts the journal's units by redundancy and code, and warns of those at exactly k and of shards on a draining backend", async () => {
    const s = setup();
    await s.fill('a', 30);
    expect((await s.journal()).failed).toEqual([]);
    const statusOf = async (state: Record<string, 'draining'>) => {
      const meter = new IsolateMeter();
      const record = new MemoryOpsRecord();
      const ops = new OpsService({
        config: {
          backends: s.backends.map((b) => ({ id: b.id, domain: b.domain, ...(state[b.id] ? { state: state[b.id] } : {}) })),
          policies: { ec: { codec: 'rs', k: 4, m: 2, writeQuorum: 5 } },
          defaultPolicy: 'ec',
          coder: { kernel: 'scalar', crc32: 'js' },
          scrubMode: 'heads',
          deployment: { mode: 'local', warnings: [] },
        },
        catalog: s.catalog,
        backends: s.backends,
        meter,
        record,
        flusher: new OpsFlusher(meter, (d) => record.record(d), 5000),
        probeEveryMs: 30_000,
      });
      return (await ops.status({ signed: false, hours: 1, probe: false })).doc;
    };
    let doc = await statusOf({});
    const units = (await s.allUnits('a')).length + (await s.allUnits(BUCKET_LIST_INSTANCE)).length;
    expect(doc.data.journal).toMatchObject({ units, atRisk: 0, lost: 0, shardsOnLeavingBackends: 0 });
    expect(doc.checks.find((c) => c.name === 'journal-redundancy')).toMatchObject({ state: 'ok' });
    // Two shards of one segment's unit recorded missing (a scrub found them, the repair could not run yet).
    const [file] = await s.files('a');
    const unit = file!.units.find((u) => u.codec !== 'replica') ?? file!.units[0]!;
    const lose = [0, 1].slice(0, unit.m);
    await s.catalog.journalReplaceUnits(
      'a',
      file!.segment,
      file!.units.map((u) => u.unitId),
      file!.units.map((u) => (u === unit ? { ...u, missing: lose } : u)),
      new Date(),
    );
    doc = await statusOf({ 'mem-5': 'draining' });
    expect(doc.data.journal.atRisk).toBe(1);
    expect(doc.data.journal.shardsOnLeavingBackends).toBeGreaterThan(0);
    expect(doc.checks.find((c) => c.name === 'journal-redundancy')).toMatchObject({ state: 'warning' });
    // The fleet check counts the journal's files too: a draining backend is not empty while they are on it (no data here).
    expect(doc.checks.find((c) => c.name === 'fleet')).toMatchObject({ state: 'warning' });
    expect(doc.checks.find((c) => c.name === 'fleet')!.detail).toMatch(/mem-5: [1-9]\d* shard file/);
    expect(JSON.stringify(doc.data.journal)).not.toContain('"a"');
  });

  it('counts units at exactly k and below k from the shards recorded missing', () => {
    const unit = (k: number, m: number, missing: number[]): CodedUnit => ({
      unitId: `u${k}${m}${missing.join('')}`,
      codec: 'rs-cauchy-gf8',
      size: 1,
      k,
      m,
      blockSize: 1,
      placement: Array.from({ length: k + m }, (_, i) => `b${i}`),
      headerLens: [],
      shardDigests: [],
      missing,
      md5: '',
      checksum: null,
    });
    expect(journalRedundancy([unit(4, 2, []), unit(4, 2, [0, 5]), unit(4, 2, [0, 1, 2]), unit(2, 2, [1])])).toEqual({
      units: 4,
      atRisk: 1,
      lost: 1,
      byCode: { '4+2': 3, '2+2': 1 },
      shardsByBackend: { b0: 2, b1: 2, b2: 3, b3: 4, b4: 3, b5: 2 },
      placements: [
        { k: 4, m: 2, on: ['b0', 'b1', 'b2', 'b3', 'b4', 'b5'], units: 1 },
        { k: 4, m: 2, on: ['b1', 'b2', 'b3', 'b4'], units: 1 },
        { k: 4, m: 2, on: ['b3', 'b4', 'b5'], units: 1 },
        { k: 2, m: 2, on: ['b0', 'b2', 'b3'], units: 1 },
      ],
    });
  });
});
