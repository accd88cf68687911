/**
 * A catalog fixture written by an older release (test/fixtures/catalog-v*: its SQLite files and
 * shard files, see each generate.ts), opened under this release as a gateway would find it: a
 * fresh copy of every SQLite file (each instance migrates as it starts) and every shard file on
 * memory backends, and a store over them with the development key ring (every deployment since
 * issue 24 seals new writes; the fixture's objects were written in the clear and must read as they are).
 */
import { readFileSync } from 'node:fs';
import { MemoryBackend } from '../../backends/memory.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { DEV_KEY_RING } from './dev-encryption.ts';
import { LocalCatalogNamespace, localCatalog } from './local-catalog.ts';
import { SqliteStorage } from './sqlite-storage.ts';

/** `fixture`: the fixture's directory; `instances`: its catalog instances; `policy`: the `ec` policy its objects were written under. */
export async function openCatalogFixture(fixture: URL, instances: readonly string[], policy: object) {
  const namespace = new LocalCatalogNamespace();
  const storages = new Map<string, SqliteStorage>();
  for (const name of instances) {
    const storage = SqliteStorage.open(readFileSync(new URL(`${name.replace(':', '-')}.sqlite`, fixture)));
    storages.set(name, storage);
    namespace.instance(name, storage); // the instance starts: its constructor migrates
  }
  const catalog = localCatalog({}, namespace);
  const shards = JSON.parse(readFileSync(new URL('shards.json', fixture), 'utf8')) as Record<string, Record<string, string>>;
  const backends = Object.keys(shards).map((id, i) => new MemoryBackend({ id, domain: `zone-${i}` }));
  for (const b of backends)
    for (const [key, b64] of Object.entries(shards[b.id]!)) {
      const bytes = Buffer.from(b64, 'base64');
      await b.put(key, new Uint8Array(bytes), bytes.length);
    }
  const config = parseConfig({
    backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
    policies: { ec: policy },
    defaultPolicy: 'ec',
  });
  const units = new UnitStore(backends, () => {}, { keyRing: DEV_KEY_RING });
  const store = new EcStore({ catalog, units, settings: { ...engineSettings(config), minPartSize: 5000 } });
  return { catalog, store, backends, units, storages };
}
