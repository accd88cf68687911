/**
 * A repair whose shard must be written to a backend the isolate knows down (engine/reachability.ts)
 * waits for it without reading anything (issue 42: "never let repair traffic for a down backend
 * compete with client reads"). Before, each unit a degraded read reported was rebuilt (k shard
 * reads, the unit's whole size) only for its write to fail: measured through `npm start` with one
 * local R2 bucket taken away, the degraded GETs' CPU per GB was 1.6-1.9x the healthy ones'.
 */
import { describe, expect, it } from 'vitest';
import { MemoryBackend } from '../../backends/memory.ts';
import type { ByteRange, GetOptions, GetResult } from '../../backends/types.ts';
import type { CodedUnit } from '../../worker/format/manifest.ts';
import { shardKey } from '../../worker/format/shard-key.ts';
import { RepairBlockedError, runRepair } from '../../worker/upkeep/repair.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { memoryEcStore } from '../support/memory-store.ts';

/** Counts the calls it answers. */
class CountingBackend extends MemoryBackend {
  gets = 0;
  heads = 0;
  override async get(key: string, range?: ByteRange, opts?: GetOptions): Promise<GetResult> {
    this.gets++;
    return super.get(key, range, opts);
  }
  override async head(key: string) {
    this.heads++;
    return super.head(key);
  }
}

const exists = (b: MemoryBackend, key: string) =>
  b.head(key).then(
    () => true,
    () => false,
  );
const stream = (b: Uint8Array) => new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(b), c.close()) });

async function setUp() {
  const backends = Array.from({ length: 6 }, (_, i) => new CountingBackend({ id: `mem-${i}`, domain: `zone-${i}` }));
  const catalog = localCatalog();
  const { store } = memoryEcStore(catalog, { backends, sealed: false });
  await store.createBucket('b', { region: 'us-east-1' });
  const body = new Uint8Array(50_000).map((_, i) => i % 251);
  await store.putObject('b', 'k', stream(body), { contentLength: body.length, metadata: { user: {} }, checksum: null, conditions: {} } as never);
  const storage = (await catalog.getManifest('b', 'k'))?.storage;
  if (storage?.kind !== 'coded') throw new Error('not stored as coded units');
  const unit: CodedUnit = storage.units[0]!;
  const on = (shard: number) => backends.find((b) => b.id === unit.placement[shard])!;
  const calls = () => backends.reduce((n, b) => n + b.gets + b.heads, 0);
  const repair = (shards: number[], down: Set<string>) =>
    runRepair({ bucket: 'b', key: 'k', unitId: unit.unitId, shards, reason: { kind: 'missing', by: 'scrub' } } as never, {
      catalog,
      backends: new Map(backends.map((b) => [b.id, b])),
      isDown: (id) => down.has(id),
    });
  return { unit, on, calls, repair, backends };
}

describe('a repair onto a backend known down', () => {
  it('reads nothing and names the backend; once it is back the shard is rebuilt', async () => {
    const { unit, on, calls, repair } = await setUp();
    const target = on(1);
    await target.delete(shardKey('b', unit.unitId, 1));
    const before = calls();
    const err = await repair([1], new Set([target.id])).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RepairBlockedError);
    expect((err as RepairBlockedError).unreachable).toEqual([target.id]);
    expect(calls() - before, 'no probe, no source read').toBe(0);

    await repair([1], new Set());
    expect(await exists(target, shardKey('b', unit.unitId, 1))).toBe(true);
    expect(calls() - before, 'the rebuild read k sources').toBeGreaterThanOrEqual(4);
  });

  it('a unit with one shard on a down backend and one on a healthy backend gets the healthy one back now', async () => {
    const { unit, on, repair } = await setUp();
    const [down, up] = [on(1), on(4)];
    await down.delete(shardKey('b', unit.unitId, 1));
    await up.delete(shardKey('b', unit.unitId, 4));
    const err = await repair([1, 4], new Set([down.id])).catch((e: unknown) => e);
    expect((err as RepairBlockedError).unreachable).toEqual([down.id]);
    expect(await exists(up, shardKey('b', unit.unitId, 4)), 'rebuilt on the healthy backend').toBe(true);
    expect(await exists(down, shardKey('b', unit.unitId, 1)), 'not written to the down one').toBe(false);
  });
});
