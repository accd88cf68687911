/**
 * Catalog loss found and ended (issue 37; upkeep/catalog-loss.ts, journal-discard.ts,
 * app/catalog-loss-gate.ts), over the real catalog SQL and the real unit store on six memory
 * backends, sealed. A catalog is replaced by an empty one over the same backends, as a lost
 * Durable Object namespace would be, and a client writes before anyone looks. The detector must
 * name the loss (counts in the status check), stop the journal of the lost instances (so the new
 * catalog's segments never hide the old ones), refuse writes to those buckets, CreateBucket of
 * their names included, across a restart of the isolate; a rebuild merges the journal into the
 * recreated bucket and ends the loss, a discard gives a journal up; and a healthy gateway, or one
 * whose journal is mid-write, or whose deleted bucket's segments are being collected, is never
 * called lost.
 */
import { describe, expect, it } from 'vitest';
import { MemoryBackend } from '../../backends/memory.ts';
import { bucketImages, replayJournal } from '../../worker/catalog/journal-replay.ts';
import type { Catalog } from '../../worker/catalog/ports.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { BUCKET_LIST_INSTANCE, decodeSegment, JOURNAL_BUCKET, parseSegmentKey } from '../../worker/format/journal.ts';
import { CatalogLossGate, REFRESH_MS } from '../../worker/app/catalog-loss-gate.ts';
import { createApp } from '../../worker/app/app.ts';
import { allowAllGate } from '../support/allow-all-gate.ts';
import { memoryEcStore, testS3Settings } from '../support/memory-store.ts';
import { catalogLossCheck } from '../../worker/ops/checks.ts';
import { lossCounts } from '../../worker/ops/status.ts';
import { CONFIRM_MS, detectCatalogLoss, journalHold } from '../../worker/upkeep/catalog-loss.ts';
import { discardJournal, resolveCatalogLoss } from '../../worker/upkeep/journal-discard.ts';
import { flushJournal } from '../../worker/upkeep/journal.ts';
import { rebuildCatalog } from '../../worker/upkeep/rebuild.ts';
import { scanUnits } from '../../worker/upkeep/unit-scan.ts';
import { DEV_KEY_RING } from '../support/dev-encryption.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { readBytes } from '../support/read-bytes.ts';
import { MemoryOpsRecord } from '../../worker/ops/book.ts';
import { OpsFlusher } from '../../worker/ops/flusher.ts';
import { IsolateMeter } from '../../worker/ops/meter.ts';
import { OpsService } from '../../worker/ops/service.ts';

const bytes = (n: number, seed: number) => new Uint8Array(n).map((_, i) => (i * 7 + seed * 13) & 0xff);
const stream = (b: Uint8Array) => new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(b), c.close()) });

function fleet() {
  const backends = Array.from({ length: 6 }, (_, i) => new MemoryBackend({ id: `mem-${i}`, domain: `zone-${i}` }));
  const config = parseConfig({
    backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
    policies: { ec: { k: 4, m: 2, blockSize: 4096, small: { threshold: 1024, mode: 'inline' } } },
    defaultPolicy: 'ec',
  });
  const units = new UnitStore(backends, undefined, { keyRing: DEV_KEY_RING });
  const policy = config.policies.ec!;
  const over = (catalog: Catalog) => {
    const store = new EcStore({ catalog, units, settings: engineSettings(config) });
    return {
      catalog,
      store,
      put: (bucket: string, key: string, body: Uint8Array) =>
        store.putObject(bucket, key, stream(body), {
          contentLength: body.length,
          metadata: { user: {}, contentType: 'application/x-test' },
          checksum: null,
          conditions: {},
        }),
      get: async (bucket: string, key: string) => readBytes((await store.getObject(bucket, key, { conditions: {} })).body),
      journal: () => flushJournal({ catalog, units, policy }, { deadline: Date.now() + 60_000 }),
      detect: (now = Date.now()) => detectCatalogLoss({ catalog, backends, ring: DEV_KEY_RING }, now),
      deps: { catalog, backends, ring: DEV_KEY_RING },
    };
  };
  /** Every journal segment on the backends, read back and replayed: what a rescue or a rebuild sees. */
  const journalOnBackends = async () => {
    const scan = await scanUnits(JOURNAL_BUCKET, backends, DEV_KEY_RING);
    const byId = new Map(backends.map((b) => [b.id, b]));
    const segments = [];
    for (const { unit } of scan.units) {
      const reader = new UnitStore([...byId.values()], undefined, { keyRing: DEV_KEY_RING });
      const key = scan.units.find((u) => u.unit.unitId === unit.unitId)!.info.header.key;
      segments.push(decodeSegment(await readBytes(await reader.open(JOURNAL_BUCKET, key, { kind: 'coded', units: [unit] }, 0, unit.size - 1))));
    }
    return Object.fromEntries(
      bucketImages(replayJournal(segments)).buckets.map((b) => [
        b.name,
        b.versions
          .filter((v) => v.current)
          .map((v) => v.key)
          .sort(),
      ]),
    );
  };
  return { backends, over, journalOnBackends };
}

describe('a lost catalog is found, refuses writes, and ends only by a rebuild or a discard', () => {
  it('a new empty catalog over the old backends: the loss is named, the journal paused, writes refused across a restart; rebuild ends it', async () => {
    const f = fleet();
    const old = f.over(localCatalog());
    await old.store.createBucket('vault', { region: 'us-east-1' });
    await old.put('vault', 'tiny', bytes(100, 1)); // inline: only the journal holds it
    await old.put('vault', 'big', bytes(30_000, 2));
    await old.store.createBucket('photos', { region: 'us-east-1' });
    await old.put('photos', 'cat.jpg', bytes(5000, 3));
    expect((await old.journal()).failed).toEqual([]);
    const before = { photos: ['cat.jpg'], vault: ['big', 'tiny'] };
    expect(await f.journalOnBackends()).toEqual(before);

    // The catalog is lost; before any look, a client recreates one bucket and writes to it.
    const now = f.over(localCatalog());
    await now.store.createBucket('vault', { region: 'us-east-1' });
    await now.put('vault', 'after-loss', bytes(2000, 4));
    await now.put('vault', 'big', bytes(3000, 9)); // a key the journal holds too, overwritten since

    const found = await now.detect();
    expect(Object.keys(found.loss.lost).sort()).toEqual([BUCKET_LIST_INSTANCE, 'photos', 'vault']);
    expect(found.loss.lost.vault).toMatchObject({ reason: 'behind', catalogSegment: 0 });
    expect(found.loss.lost.photos).toMatchObject({ reason: 'unknown' });
    // The status check: critical, counts only.
    const check = catalogLossCheck(lossCounts(found.loss));
    expect(check).toMatchObject({ name: 'catalog-lost', state: 'critical' });
    expect(check.detail).toContain('1 bucket(s) the catalog lacks');
    expect(check.detail).toContain('1 bucket(s) whose catalog is behind it');
    expect(`${check.detail} ${check.action}`).not.toMatch(/vault|photos/);

    // The journal of the lost instances stops: the new catalog's segments cannot hide the old ones.
    const run = await now.journal();
    expect(run).toMatchObject({ paused: 3, failed: [] });
    expect(await f.journalOnBackends()).toEqual(before);
    expect(Object.keys((await now.detect()).loss.lost).length).toBe(3); // still, run after run

    // Writes to the lost buckets are refused (CreateBucket of a lost name too), reads and other buckets are not;
    // a gate of a new isolate (a restart) reads the record from the catalog.
    const gate = new CatalogLossGate(() => now.catalog.catalogLoss());
    for (const [method, bucket] of [
      ['PUT', 'vault'],
      ['DELETE', 'vault'],
      ['POST', 'vault'],
      ['PUT', 'photos'],
    ] as const) {
      await expect(gate.check(method, bucket)).rejects.toMatchObject({ code: 'InvalidBucketState' });
    }
    await expect(gate.check('GET', 'vault')).resolves.toBeUndefined();
    await expect(gate.check('PUT', 'fresh')).resolves.toBeUndefined();

    // A rebuild merges the journal into the recreated bucket (the write made since stays) and ends its loss.
    const rebuilt = await rebuildCatalog('vault', f.backends, now.catalog, DEV_KEY_RING, { journal: true, merge: true });
    expect(rebuilt.journal?.skipped).toBeUndefined();
    expect(rebuilt.journal?.unreadable).toEqual([]);
    expect(await now.get('vault', 'tiny')).toEqual(bytes(100, 1));
    // The key written since keeps only that write (an overwrite, as S3 has it): one version, the later.
    expect(rebuilt.journal?.keptNewer).toEqual(['big']);
    expect(await now.get('vault', 'big')).toEqual(bytes(3000, 9));
    const versions = await now.catalog.listVersions('vault', { prefix: '', delimiter: null, keyMarker: null, versionIdMarker: null, maxKeys: 100 });
    expect(versions.versions.map((v) => v.key)).toEqual(['after-loss', 'big', 'tiny']);
    expect(await now.get('vault', 'after-loss')).toEqual(bytes(2000, 4));
    let loss = await resolveCatalogLoss('vault', now.deps, Date.now());
    expect(Object.keys(loss.lost).sort()).toEqual([BUCKET_LIST_INSTANCE, 'photos']);
    await expect(new CatalogLossGate(() => now.catalog.catalogLoss()).check('PUT', 'vault')).resolves.toBeUndefined();

    // The other bucket rebuilt too: the bucket list, left alone, has its old journal discarded, and
    // the journal goes on after it; what the backends hold replays to both buckets.
    await now.catalog.insertBucket('photos', 'us-east-1');
    await rebuildCatalog('photos', f.backends, now.catalog, DEV_KEY_RING, { journal: true, merge: true });
    loss = await resolveCatalogLoss('photos', now.deps, Date.now());
    expect(loss.lost).toEqual({});
    expect(await now.get('photos', 'cat.jpg')).toEqual(bytes(5000, 3));
    expect(await now.journal()).toMatchObject({ paused: 0, failed: [] });
    expect((await now.detect()).loss.lost).toEqual({});
    expect(await f.journalOnBackends()).toEqual({ photos: ['cat.jpg'], vault: ['after-loss', 'big', 'tiny'] });
  });

  it("a discard gives up a lost bucket's journal: its writes are accepted again, its segments kept for a while", async () => {
    const f = fleet();
    const old = f.over(localCatalog());
    await old.store.createBucket('scratch', { region: 'us-east-1' });
    await old.put('scratch', 'x', bytes(3000, 5));
    await old.journal();
    const now = f.over(localCatalog());
    expect(Object.keys((await now.detect()).loss.lost).sort()).toEqual([BUCKET_LIST_INSTANCE, 'scratch']);
    const report = await discardJournal('scratch', now.deps, Date.now());
    expect(report.segments).toBeGreaterThan(0);
    expect(report.loss.lost).toEqual({}); // the bucket list went with it, alone
    // Nothing deleted yet: the segments wait (queued) for the discard's grace; no longer unknown.
    const segments = (await scanUnits(JOURNAL_BUCKET, f.backends, DEV_KEY_RING)).units.map((u) => parseSegmentKey(u.info.header.key)!.instance);
    expect(segments).toContain('scratch');
    expect((await now.detect()).loss).toEqual({ lost: {}, suspect: {} });
    await expect(new CatalogLossGate(() => now.catalog.catalogLoss()).check('PUT', 'scratch')).resolves.toBeUndefined();
  });

  it('reads the newest unknown units first, a few a run; while some are unread and a loss is in view, the journal stores nothing', async () => {
    const f = fleet();
    const old = f.over(localCatalog());
    for (const b of ['b1', 'b2', 'b3']) {
      await old.store.createBucket(b, { region: 'us-east-1' });
      await old.put(b, 'k', bytes(3000, 1));
    }
    await old.journal();
    const now = f.over(localCatalog());
    await now.store.createBucket('fresh', { region: 'us-east-1' }); // a new bucket, not lost: its journal would run
    const headers = new Map<string, { instance: string; segment: number } | null>();
    const look = () => detectCatalogLoss({ ...now.deps, headers }, Date.now(), 1);
    const first = await look();
    expect(first.read).toBe(1);
    expect(first.unread).toBe(first.unknown - 1);
    expect(Object.keys(first.loss.lost).length + Object.keys(first.loss.suspect).length).toBe(1);
    const hold = journalHold(first);
    expect(hold).toMatch(/not yet read/);
    const held = await flushJournal(
      {
        catalog: now.catalog,
        units: new UnitStore(f.backends, undefined, { keyRing: DEV_KEY_RING }),
        policy: parseConfig({
          backends: f.backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
          policies: { ec: { k: 4, m: 2, blockSize: 4096 } },
          defaultPolicy: 'ec',
        }).policies.ec!,
      },
      { deadline: Date.now() + 60_000, hold },
    );
    expect(held).toMatchObject({ segments: 0, held: hold });
    let last = first;
    for (let i = 0; i < 10 && last.unread > 0; i++) last = await look();
    expect(last.unread).toBe(0);
    expect(journalHold(last)).toBeNull();
    expect(Object.keys(last.loss.lost).sort()).toEqual([BUCKET_LIST_INSTANCE, 'b1', 'b2', 'b3']);
  });

  it('a healthy gateway, a segment written and not yet acknowledged, a deleted bucket being collected: no loss', async () => {
    const f = fleet();
    const g = f.over(localCatalog());
    await g.store.createBucket('a', { region: 'us-east-1' });
    await g.put('a', 'k', bytes(3000, 6));
    await g.journal();
    expect((await g.detect()).loss).toEqual({ lost: {}, suspect: {} });

    // The look runs while a segment is stored and not yet acknowledged (the cron's journal of another isolate).
    await g.put('a', 'k2', bytes(3000, 7));
    let during: Awaited<ReturnType<typeof g.detect>> | undefined;
    const watching = new Proxy(g.catalog, {
      get(target, prop) {
        if (prop === 'journalWritten')
          return async (...args: Parameters<Catalog['journalWritten']>) => ((during = await g.detect()), target.journalWritten(...args));
        const v = Reflect.get(target, prop) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    await flushJournal(
      {
        catalog: watching,
        units: new UnitStore(f.backends, undefined, { keyRing: DEV_KEY_RING }),
        policy: parseConfig({
          backends: f.backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
          policies: { ec: { k: 4, m: 2, blockSize: 4096 } },
          defaultPolicy: 'ec',
        }).policies.ec!,
      },
      { deadline: Date.now() + 60_000 },
    );
    expect(during?.unknown).toBeGreaterThan(0);
    expect(during?.loss).toEqual({ lost: {}, suspect: {} });

    // A deleted bucket whose segments the collector has taken and not deleted yet: a suspect, not a loss.
    await g.store.createBucket('gone', { region: 'us-east-1' });
    await g.put('gone', 'k', bytes(3000, 8));
    await g.journal();
    await g.store.deleteObject('gone', 'k', {} as never);
    await g.store.deleteBucket('gone');
    await g.catalog.takeDueGarbage(new Date(Date.now() + 3600_000), 1000); // taken, shards not deleted
    const t = Date.now();
    const first = await g.detect(t);
    expect(first.loss.lost).toEqual({});
    expect(Object.keys(first.loss.suspect)).toEqual(['gone']);
    expect(catalogLossCheck(lossCounts(first.loss)).state).toBe('ok');
    // Still there a minute later (the collection failed for good): it is a loss, an operator decides.
    expect(Object.keys((await g.detect(t + CONFIRM_MS)).loss.lost)).toEqual(['gone']);
  });
});

describe('the S3 front door of a gateway whose catalog is lost', () => {
  it('answers writes to a lost bucket, CreateBucket of its name included, with InvalidBucketState; reads and other buckets go on; the record is read again after REFRESH_MS', async () => {
    const catalog = localCatalog();
    const { store } = memoryEcStore(catalog);
    let clock = 1_000_000;
    const gate = new CatalogLossGate(
      () => catalog.catalogLoss(),
      () => clock,
    );
    const app = createApp({ store, config: store.config, authenticate: allowAllGate, settings: testS3Settings(), catalogLoss: gate });
    await catalog.setCatalogLoss({ lost: { vault: { reason: 'unknown', newest: 7, catalogSegment: 0, foundAt: 1 } }, suspect: {} });
    const create = await app.request('/vault', { method: 'PUT' });
    expect(create.status).toBe(409);
    expect(await create.text()).toMatch(/<Code>InvalidBucketState<\/Code>.*shardgate rebuild --bucket vault/s);
    expect((await app.request('/vault/k', { method: 'PUT', body: 'x', headers: { 'content-length': '1' } })).status).toBe(409);
    expect((await app.request('/vault/k', { method: 'DELETE' })).status).toBe(409);
    expect((await app.request('/vault/k')).status).toBe(404); // a read: NoSuchBucket, as the catalog holds it now
    expect((await app.request('/other', { method: 'PUT' })).status).toBe(200);
    // Another isolate ends the loss (a rebuild): this one sees it once its copy is REFRESH_MS old.
    await catalog.setCatalogLoss({ lost: {}, suspect: {} });
    expect((await app.request('/vault', { method: 'PUT' })).status).toBe(409);
    clock += REFRESH_MS;
    expect((await app.request('/vault', { method: 'PUT' })).status).toBe(200);
  });

  it('the status document carries the critical catalog-lost check, with counts and no bucket name', async () => {
    const catalog = localCatalog();
    const backends = [new MemoryBackend({ id: 'm0', domain: 'z0' })];
    const meter = new IsolateMeter();
    const record = new MemoryOpsRecord();
    const ops = new OpsService({
      config: {
        backends: [{ id: 'm0', domain: 'z0' }],
        policies: {},
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
    await catalog.setCatalogLoss({
      lost: {
        secret: { reason: 'unknown', newest: 3, catalogSegment: 0, foundAt: 1 },
        [BUCKET_LIST_INSTANCE]: { reason: 'behind', newest: 9, catalogSegment: 1, foundAt: 1 },
      },
      suspect: {},
    });
    const { doc } = await ops.status({ signed: false, hours: 1, probe: false });
    expect(doc.health).toBe('critical');
    const check = doc.checks.find((c) => c.name === 'catalog-lost')!;
    expect(check).toMatchObject({ state: 'critical' });
    expect(check.detail).toMatch(/1 bucket\(s\) the catalog lacks, the bucket list/);
    expect(JSON.stringify(doc)).not.toContain('secret');
  });
});
