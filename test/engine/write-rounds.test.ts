/**
 * Small writes in two rounds (issue 23), on EcStore over the SQL catalog in process and memory backends:
 * - catalog calls are counted (round trips to the catalog's Durable Object instances): a coded PUT makes two,
 *   prepareWrite and commitManifest; an inline PUT one, commitManifest;
 * - the shards upload while prepareWrite is in flight (one round, not two in series), yet no
 *   backend stores a shard before the reservation has answered: each shard's last bytes wait;
 * - a refused prepareWrite (If-None-Match: * on an existing key) is the PUT's error and leaves
 *   no shard and no reservation behind.
 */
import { describe, expect, it } from 'vitest';
import { FaultyBackend, MemoryBackend } from '../../backends/index.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { prng, randomBytes } from '../support/random.ts';
import { readBytes } from '../support/read-bytes.ts';

const put = (size: number, conditions = {}) => ({ contentLength: size, metadata: { user: {} }, checksum: null, conditions });
const stream = (b: Uint8Array) => new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(b), c.close()) });

/** Round trips to the catalog's Durable Object instances by method name, from now on (as the bench counts them). */
function counted(catalog: ReturnType<typeof localCatalog>): Map<string, number> {
  catalog.namespace.calls.clear();
  return catalog.namespace.calls;
}

async function setup(policy: object) {
  const backends = Array.from({ length: 11 }, (_, i) => new FaultyBackend(new MemoryBackend({ id: `m${i}`, domain: `zone-${i}` })));
  const config = parseConfig({
    backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
    policies: { main: policy },
    defaultPolicy: 'main',
  });
  const catalog = localCatalog({ garbageGraceMs: 0 });
  const store = new EcStore({ catalog, units: new UnitStore(backends), settings: engineSettings(config) });
  await store.createBucket('b', { region: 'us-east-1' });
  return { backends, catalog, store, calls: counted(catalog) };
}

/** Blobs stored on the backends (whole PUTs), by key. */
async function stored(backends: FaultyBackend[]): Promise<string[]> {
  const keys: string[] = [];
  for (const b of backends) keys.push(...(await b.inner.list('')).entries.map((e) => e.key));
  return keys;
}

describe('small writes: catalog calls and rounds', () => {
  const rand = prng(2323);

  it.each([
    ['4+2', { k: 4, m: 2, blockSize: 4096 }],
    ['8+3', { k: 8, m: 3, blockSize: 4096 }],
    ['replicate-3 small', { k: 8, m: 3, blockSize: 4096, small: { threshold: 128 * 1024, mode: 'replicate', replicas: 3 } }],
  ])('a coded %s PUT makes 2 catalog calls; an inline one 1', async (_name, policy) => {
    const s = await setup(policy);
    const data = randomBytes(rand, 64 * 1024);
    await s.store.putObject('b', 'k', stream(data), put(data.length));
    expect(Object.fromEntries(s.calls)).toEqual({ prepareWrite: 1, commitManifest: 1 });
    expect(Buffer.compare(await readBytes((await s.store.getObject('b', 'k', { conditions: {} })).body), data)).toBe(0);

    const inline = await setup({ ...policy, small: { threshold: 4096, mode: 'inline' } });
    await inline.store.putObject('b', 'tiny', stream(data.subarray(0, 100)), put(100));
    expect(Object.fromEntries(inline.calls)).toEqual({ commitManifest: 1 });
    expect(await stored(inline.backends)).toEqual([]);
  });

  it('shards upload while prepareWrite is in flight, and none is stored before it answers', async () => {
    const s = await setup({ k: 4, m: 2, blockSize: 4096 });
    let answer!: () => void;
    const asked = new Promise<void>((resolve) => {
      const prepare = s.catalog.prepareWrite.bind(s.catalog);
      s.catalog.prepareWrite = async (...args) => {
        resolve();
        await new Promise<void>((r) => (answer = r));
        return prepare(...args);
      };
    });
    const data = randomBytes(rand, 50_000);
    const putting = s.store.putObject('b', 'k', stream(data), put(data.length));
    await asked;
    // Wait until all six uploads have been started by the writer (bounded: a few macrotasks).
    for (let i = 0; i < 50 && s.backends.filter((b) => b.calls.some((c) => c.op === 'put')).length < 6; i++) await new Promise((r) => setTimeout(r, 0));
    expect(s.backends.filter((b) => b.calls.some((c) => c.op === 'put')).length, 'the uploads run beside the reservation').toBe(6);
    expect(await stored(s.backends), 'no shard is stored before its unit is reserved').toEqual([]);
    answer();
    await putting;
    expect((await stored(s.backends)).length).toBe(6);
  });

  it('a refused prepareWrite is the PUT\'s error and leaves no shard and no reservation', async () => {
    const s = await setup({ k: 4, m: 2, blockSize: 4096 });
    const data = randomBytes(rand, 20_000);
    await s.store.putObject('b', 'k', stream(data), put(data.length));
    const before = await stored(s.backends);
    await expect(s.store.putObject('b', 'k', stream(data), put(data.length, { ifNoneMatch: '*' }))).rejects.toMatchObject({ code: 'PreconditionFailed' });
    expect((await stored(s.backends)).sort()).toEqual(before.sort());
    expect((await s.catalog.bucketHealth('b', new Date())).reservations.held, 'a refused write reserves nothing').toBe(0);
    expect(Buffer.compare(await readBytes((await s.store.getObject('b', 'k', { conditions: {} })).body), data)).toBe(0);
  });
});
