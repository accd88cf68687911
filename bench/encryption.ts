/**
 * What encryption costs (issue 24): CPU seconds per GB of PUT and GET through the product's
 * EcStore, sealed (the development key ring) against clear (no key ring), for 4+2 and 8+3 at
 * 1 MiB and 64 MiB, and small-object PUTs (4 KiB, inline; 16 KiB, replicated) per 1000. In one
 * process over memory backends and the SQL catalog in process, so the figures are the gateway's
 * own work (coding, hashing, sealing), not the network's. Ratios are sealed / clear; each figure
 * is the best of --reps runs (default 3).
 *   usage: npm run bench:encryption [-- --reps N --quick]
 */
import { parseArgs } from 'node:util';
import { cpus } from 'node:os';
import { MemoryBackend } from '../backends/index.ts';
import { engineSettings, parseConfig } from '../worker/config/config.ts';
import { EcStore } from '../worker/engine/ec-store.ts';
import { UnitStore } from '../worker/engine/unit-store.ts';
import { KeyRing } from '../worker/format/seal.ts';
import { DEV_KEY_VALUE } from '../worker/config/key-ring.ts';
import { localCatalog } from '../test/support/local-catalog.ts';

const { values } = parseArgs({ options: { reps: { type: 'string' }, quick: { type: 'boolean' } } });
const REPS = Number(values.reps ?? 3);
const MiB = 1024 * 1024;
const GB = 1e9;

function store(sealed: boolean): EcStore {
  const backends = Array.from({ length: 11 }, (_, i) => new MemoryBackend({ id: `m${i}`, domain: `z${i}` }));
  const config = parseConfig({
    backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
    policies: { 'ec-4-2': { k: 4, m: 2 }, 'ec-8-3': { k: 8, m: 3 }, small: { k: 4, m: 2, small: { threshold: 16384, mode: 'replicate', replicas: 3 } } },
    defaultPolicy: 'ec-4-2',
    buckets: { wide: 'ec-8-3', small: 'small' },
  });
  const ring = sealed ? KeyRing.fromBase64({ dev: DEV_KEY_VALUE }, 'dev') : undefined;
  return new EcStore({
    catalog: localCatalog({ garbageGraceMs: 0 }),
    units: new UnitStore(backends, () => {}, { keyRing: ring }),
    settings: engineSettings(config),
  });
}

const body = (bytes: Uint8Array, chunk = 64 * 1024) =>
  new ReadableStream<Uint8Array>({
    start(c) {
      for (let at = 0; at < bytes.length; at += chunk) c.enqueue(bytes.subarray(at, at + chunk));
      c.close();
    },
  });
const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

async function drain(s: ReadableStream<Uint8Array>): Promise<number> {
  let n = 0;
  for await (const c of s as unknown as AsyncIterable<Uint8Array>) n += c.length;
  return n;
}

/** CPU seconds per GB of PUT and of GET of `count` objects of `size` in `bucket`. */
async function measure(sealed: boolean, bucket: string, size: number, count: number): Promise<{ put: number; get: number }> {
  const s = store(sealed);
  for (const b of ['plain', 'wide', 'small']) await s.createBucket(b, { region: 'us-east-1' });
  const data = new Uint8Array(size).map((_, i) => (i * 2654435761) >>> 24);
  const put = { contentLength: size, metadata: { user: {} }, checksum: null, conditions: {} };
  await s.putObject(bucket, 'warm', body(data), put);
  await drain((await s.getObject(bucket, 'warm', { conditions: {} })).body);
  let t = cpu();
  for (let i = 0; i < count; i++) await s.putObject(bucket, `o${i}`, body(data), put);
  const putS = cpu() - t;
  t = cpu();
  for (let i = 0; i < count; i++) await drain((await s.getObject(bucket, `o${i}`, { conditions: {} })).body);
  const getS = cpu() - t;
  const bytes = size * count;
  return { put: (putS * GB) / bytes, get: (getS * GB) / bytes };
}

async function best(sealed: boolean, bucket: string, size: number, count: number) {
  let out = { put: Infinity, get: Infinity };
  for (let r = 0; r < REPS; r++) {
    const m = await measure(sealed, bucket, size, count);
    out = { put: Math.min(out.put, m.put), get: Math.min(out.get, m.get) };
  }
  return out;
}

const cases: { name: string; bucket: string; size: number; count: number; perThousand?: boolean }[] = [
  { name: '4+2 1 MiB', bucket: 'plain', size: MiB, count: values.quick ? 8 : 64 },
  { name: '4+2 64 MiB', bucket: 'plain', size: 64 * MiB, count: values.quick ? 1 : 4 },
  { name: '8+3 1 MiB', bucket: 'wide', size: MiB, count: values.quick ? 8 : 64 },
  { name: '8+3 64 MiB', bucket: 'wide', size: 64 * MiB, count: values.quick ? 1 : 4 },
  { name: 'small 4 KiB inline', bucket: 'plain', size: 4096, count: values.quick ? 100 : 1000, perThousand: true },
  { name: 'small 16 KiB replicate-3', bucket: 'small', size: 16384, count: values.quick ? 100 : 1000, perThousand: true },
];

console.log(`encryption cost: ${cpus()[0]?.model} x${cpus().length}, Node ${process.version}, best of ${REPS}`);
console.log('case                          PUT clear  PUT sealed  ratio   GET clear  GET sealed  ratio   unit');
for (const c of cases) {
  const clear = await best(false, c.bucket, c.size, c.count);
  const sealed = await best(true, c.bucket, c.size, c.count);
  const scale = c.perThousand ? (c.size * 1000) / GB : 1; // CPU s per 1000 objects instead of per GB
  const f = (x: number) => (x * scale).toFixed(c.perThousand ? 3 : 2).padStart(9);
  const r = (a: number, b: number) => `${(b / a).toFixed(2)}x`.padStart(6);
  console.log(
    `${c.name.padEnd(28)} ${f(clear.put)}  ${f(sealed.put)}  ${r(clear.put, sealed.put)}  ${f(clear.get)}  ${f(sealed.get)}  ${r(clear.get, sealed.get)}   ${c.perThousand ? 'CPU s / 1000 objects' : 'CPU s / GB'}`,
  );
}
