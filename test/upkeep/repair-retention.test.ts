/**
 * A locked version's shard rebuilt by a repair onto a backend that enforces retention gets the
 * version's COMPLIANCE retention, as its write's shards did (issue 25: "shard files of locked
 * versions are written with a matching retention"); an unlocked version's does not.
 */
import { describe, expect, it } from 'vitest';
import { MemoryBackend } from '../../backends/memory.ts';
import type { BlobRetention } from '../../backends/types.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { shardKey } from '../../worker/format/shard-key.ts';
import { runRepair } from '../../worker/upkeep/repair.ts';
import { localCatalog } from '../support/local-catalog.ts';

/** A backend that records the retentions it is given (as an S3 bucket with Object Lock keeps them). */
class RetainingBackend extends MemoryBackend {
  readonly retained = new Map<string, Date>();
  async retain(key: string, r: BlobRetention): Promise<void> {
    this.retained.set(key, r.retainUntil);
  }
}

const stream = (b: Uint8Array) => new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(b), c.close()) });

describe('repair and backend retention', () => {
  it("a rebuilt shard of a COMPLIANCE-locked version is retained until the version's date; an unlocked one is not", async () => {
    const backends = Array.from({ length: 6 }, (_, i) => new RetainingBackend({ id: `mem-${i}`, domain: `zone-${i}` }));
    const config = parseConfig({
      backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
      policies: { ec: { k: 4, m: 2, blockSize: 4096 } },
      defaultPolicy: 'ec',
    });
    const catalog = localCatalog();
    const store = new EcStore({ catalog, units: new UnitStore(backends), settings: engineSettings(config) });
    await store.createBucket('vault', { region: 'us-east-1', objectLock: true });
    const retainUntil = new Date(Date.now() + 86_400_000).toISOString();
    const body = new Uint8Array(20_000).fill(7);
    const put = (key: string, objectLock?: object) =>
      store.putObject('vault', key, stream(body), {
        contentLength: body.length,
        metadata: { user: {}, ...(objectLock ? { objectLock } : {}) },
        checksum: null,
        conditions: {},
      } as never);
    await put('locked', { mode: 'COMPLIANCE', retainUntil });
    await put('plain');
    for (const key of ['locked', 'plain']) {
      const storage = (await catalog.getManifest('vault', key))?.storage;
      if (storage?.kind !== 'coded') throw new Error('not stored as coded units');
      const unit = storage.units[0]!;
      const backend = backends.find((b) => b.id === unit.placement[1])!;
      const sk = shardKey('vault', unit.unitId, 1);
      // The shard is lost (the backend wiped: retention does not survive that), then rebuilt.
      await backend.delete(sk);
      backend.retained.clear();
      await runRepair({ bucket: 'vault', key, unitId: unit.unitId, shards: [1], reason: { kind: 'missing', by: 'scrub' } } as never, {
        catalog,
        backends: new Map(backends.map((b) => [b.id, b])),
      });
      expect(await backend.head(sk), `${key}: shard rebuilt`).not.toBeNull();
      if (key === 'locked') expect(backend.retained.get(sk)?.toISOString()).toBe(retainUntil);
      else expect(backend.retained.size).toBe(0);
    }
  });
});
