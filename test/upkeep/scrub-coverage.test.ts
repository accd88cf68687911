/**
 * The scrubber never skips a unit and never reports a pass it has not finished (issue 20): it walks
 * the catalog's unit index, not keys, checks at most `maxCalls` shards a run and resumes at the
 * unit after the last one it checked. A lost shard anywhere, in the last part of a 2,000-part object or in
 * one of 10,000 small objects, is found within ceil(total shards / per-run limit) runs, and the
 * bucket's scrub coverage stays below 100% until the pass that found it completes.
 * (Before: a run stopped part-way through an object and the cursor moved past it; its other
 * units were never checked, by the cron or by `scrub --all`, while the status said 100%.)
 */
import { describe, expect, it } from 'vitest';
import { MemoryBackend } from '../../backends/index.ts';
import { localCatalog } from '../support/local-catalog.ts';
import type { CodedUnit } from '../../worker/format/manifest.ts';
import { shardKey } from '../../worker/format/shard-key.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore, type RepairTask } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { scrubBatch } from '../../worker/upkeep/scrubber.ts';

const PER_RUN = 600;
/**
 * Proofs at two sizes (docs/TESTING.md): `npm test` writes a 500-part object and 2,500 small
 * objects (6 and 25 runs of PER_RUN: a run still stops inside the object, and the lost shard still
 * lies near the end); `npm run test:full` the 2,000 parts and 10,000 objects.
 */
const FULL = process.env.SHARDGATE_FULL_SIZE === '1';
const PARTS = FULL ? 2000 : 500;
const OBJECTS = FULL ? 10_000 : 2_500;
const body = (n: number) => new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(new Uint8Array(n).fill(7)), c.close()) });
const put = (n: number) => ({ contentLength: n, metadata: { user: {} }, checksum: null, conditions: {} });

function setup() {
  const backends = Array.from({ length: 6 }, (_, i) => new MemoryBackend({ id: `m${i}`, domain: `zone-${i}` }));
  const config = parseConfig({
    backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
    policies: { main: { k: 4, m: 2, blockSize: 4096 } },
    defaultPolicy: 'main',
  });
  const units = new UnitStore(backends, () => {});
  const catalog = localCatalog({ garbageGraceMs: 0 });
  const store = new EcStore({ catalog, units, settings: { ...engineSettings(config), minPartSize: 1000 } });
  return { backends, catalog, store, units };
}

/** Runs the scrubber until it reports the lost shard; returns the runs it took. */
async function runsToFind(s: ReturnType<typeof setup>, bucket: string, lost: { unit: CodedUnit; shard: number }, maxRuns: number): Promise<number> {
  const found: RepairTask[] = [];
  for (let run = 1; run <= maxRuns; run++) {
    const before = (await s.catalog.bucketHealth(bucket, new Date())).scrub;
    await scrubBatch(s.catalog, s.units.byId, { mode: 'heads', unitsPerRun: 100 }, (t) => found.push(t), PER_RUN);
    if (found.some((t) => t.unitId === lost.unit.unitId && t.shards.includes(lost.shard))) return run;
    // Not found yet: no complete pass may have been reported since the start.
    const h = await s.catalog.bucketHealth(bucket, new Date());
    expect(h.scrub.passes, `run ${run}: a pass completed without finding the lost shard`).toBe(before.passes);
    expect(h.scrub.checked, `run ${run}: units counted as checked`).toBeLessThan(h.scrub.units);
    expect(h.scrub.oldestUnchecked, `run ${run}: the oldest unchecked unit is named`).not.toBeNull();
  }
  throw new Error(`the lost shard was not found in ${maxRuns} runs`);
}

describe('scrub coverage', () => {
  it(`a lost shard in the last part of a ${PARTS}-part object is found within ceil(shards / per-run limit) runs`, async () => {
    const s = setup();
    await s.store.createBucket('big', { region: 'us-east-1' });
    await s.store.putObject('big', 'before', body(5000), put(5000)); // objects on both sides of it
    const up = await s.store.createMultipartUpload('big', 'parts', { metadata: { user: {} }, checksum: null });
    const parts = [];
    for (let n = 1; n <= PARTS; n++) {
      const p = await s.store.uploadPart('big', 'parts', up.uploadId, n, body(5000), { contentLength: 5000, checksum: null }); // over the 4 KiB small-object threshold: 4+2
      parts.push({ partNumber: n, etag: p.etag });
    }
    await s.store.completeMultipartUpload('big', 'parts', up.uploadId, parts, { conditions: {} });
    await s.store.putObject('big', 'z-after', body(5000), put(5000));
    const m = (await s.catalog.getManifest('big', 'parts'))!;
    const units = (m.storage as { units: CodedUnit[] }).units;
    expect(units).toHaveLength(PARTS);
    const last = units.at(-1)!;
    await s.backends.find((b) => b.id === last.placement[3])!.delete(shardKey('big', last.unitId, 3));

    const shards = (PARTS + 2) * 6;
    const limit = Math.ceil(shards / PER_RUN);
    const runs = await runsToFind(s, 'big', { unit: last, shard: 3 }, limit);
    expect(runs).toBeLessThanOrEqual(limit);
  });

  it(`a lost shard among ${OBJECTS} small objects is found within ceil(shards / per-run limit) runs`, async () => {
    const s = setup();
    await s.store.createBucket('many', { region: 'us-east-1' });
    for (let i = 0; i < OBJECTS; i++) await s.store.putObject('many', `k${String(i).padStart(5, '0')}`, body(5000), put(5000));
    const m = (await s.catalog.getManifest('many', `k${String(OBJECTS - 2).padStart(5, '0')}`))!;
    const unit = (m.storage as { units: CodedUnit[] }).units[0]!;
    await s.backends.find((b) => b.id === unit.placement[5])!.delete(shardKey('many', unit.unitId, 5));
    const limit = Math.ceil((OBJECTS * 6) / PER_RUN);
    expect(await runsToFind(s, 'many', { unit, shard: 5 }, limit)).toBeLessThanOrEqual(limit);
  });
});
