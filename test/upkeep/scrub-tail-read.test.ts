/**
 * The heads scrub over a backend whose HEAD answers from metadata (issue 37): the local R2
 * emulator (miniflare's r2 bucket worker) keeps each object's size in SQLite and its bytes in a
 * blob file; with the file deleted on disk, HEAD still answers the size while GET answers
 * NotFound (its blob store's fetch gets a 404: "value === null -> NoSuchKey"). An outside drill
 * deleted shard files and the heads scrub found 0 damage. A 1-byte read of each shard's last byte
 * ('tail-read', the local default) finds it; a HEAD cannot.
 */
import { describe, expect, it } from 'vitest';
import { MemoryBackend } from '../../backends/memory.ts';
import { BackendError, type BlobInfo } from '../../backends/types.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore, type RepairTask } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { shardKey } from '../../worker/format/shard-key.ts';
import { scrubBatch } from '../../worker/upkeep/scrubber.ts';
import { localCatalog } from '../support/local-catalog.ts';

/** A memory backend that, like the emulator, answers HEAD from metadata kept apart from the bytes. */
class MetadataHeadBackend extends MemoryBackend {
  readonly metadata = new Map<string, BlobInfo>();
  override async put(...a: Parameters<MemoryBackend['put']>) {
    await super.put(...a);
    this.metadata.set(a[0], await super.head(a[0]));
  }
  override async head(key: string): Promise<BlobInfo> {
    const info = this.metadata.get(key);
    if (!info) throw new BackendError(this.id, 'NotFound', key);
    return info;
  }
  /** The blob file removed on disk: its metadata row stays. */
  async deleteFileOnly(key: string) {
    await super.delete(key);
  }
}

describe('heads scrub over an emulator that HEADs from metadata', () => {
  it('a HEAD finds nothing; a 1-byte tail read finds the deleted shard file and queues its repair', async () => {
    const backends = Array.from({ length: 6 }, (_, i) => new MetadataHeadBackend({ id: `r${i}`, domain: `z${i}` }));
    const config = parseConfig({
      backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
      policies: { ec: { k: 4, m: 2, blockSize: 4096 } },
      defaultPolicy: 'ec',
    });
    const catalog = localCatalog();
    const store = new EcStore({ catalog, units: new UnitStore(backends), settings: engineSettings(config) });
    await store.createBucket('b', { region: 'us-east-1' });
    await store.putObject('b', 'k', new Blob([new Uint8Array(9000).fill(3)]).stream(), {
      contentLength: 9000,
      metadata: { user: {} },
      checksum: null,
      conditions: {},
    });
    const m = await catalog.getManifest('b', 'k');
    const unit = m!.storage.kind === 'coded' ? m!.storage.units[0]! : null;
    await backends.find((b) => b.id === unit!.placement[2])!.deleteFileOnly(shardKey('b', unit!.unitId, 2));
    const byId = new Map(backends.map((b) => [b.id, b]));

    const queued: RepairTask[] = [];
    expect(await scrubBatch(catalog, byId, { mode: 'heads', unitsPerRun: 10, headsBy: 'head' }, (t) => void queued.push(t))).toMatchObject({
      units: 1,
      damaged: 0,
    });
    expect(await scrubBatch(catalog, byId, { mode: 'heads', unitsPerRun: 10, headsBy: 'tail-read' }, (t) => void queued.push(t))).toMatchObject({
      units: 1,
      damaged: 1,
    });
    expect(queued).toEqual([expect.objectContaining({ key: 'k', shards: [2] })]);
  });
});
