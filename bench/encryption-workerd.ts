/**
 * What encryption costs in workerd (issue 24): the gateway's workerd CPU seconds per GB of PUT
 * and GET, sealed (the development key) against clear (no `encryption`), for 4+2 and 8+3 at
 * 1 MiB and 64 MiB, and per 1000 small (4 KiB, inline) PUTs and GETs. `--records 65536,1048576`
 * adds sealed gateways with those fixed record sizes. The gateway runs in
 * workerd (wrangler dev, as the tests run it) over eleven memory backends, so the figures are
 * the Worker's own work, not a backend's. One gateway per mode, all
 * running at once, rounds alternating between them; each case best of --reps.
 *   usage: npm run bench:encryption:workerd [-- --reps N] [--records BYTES,...]
 */
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { startGateway, TEST_ENCRYPTION } from '../test/engine-s3rver/gateway-harness.ts';
import { cpuSeconds, listenerOf, workerdPids } from '../test/support/proc.ts';

const { values } = parseArgs({ options: { reps: { type: 'string' }, records: { type: 'string' } } });
const REPS = Number(values.reps ?? 3);
const MiB = 1024 * 1024;
const GB = 1e9;
/** Extra sealed gateways with a fixed record size (encryption.recordBytes), to compare against the default. */
const RECORDS = (values.records ?? '').split(',').filter(Boolean).map(Number);

function config(sealed: boolean, recordBytes?: number): object {
  return {
    backends: Array.from({ length: 11 }, (_, i) => ({ id: `mem-${i}`, kind: 'memory', domain: `memory/zone-${i}` })),
    policies: { 'ec-4-2': { k: 4, m: 2 }, 'ec-8-3': { k: 8, m: 3 } },
    defaultPolicy: 'ec-4-2',
    buckets: { wide: 'ec-8-3' },
    credentials: [{ accessKeyId: 'shardgate-dev', secretAccessKey: 'shardgate-dev-secret' }],
    maxObjectSize: 128 * MiB,
    ...(sealed ? { encryption: { ...TEST_ENCRYPTION, ...(recordBytes ? { recordBytes } : {}) } } : {}),
  };
}

/** `gets`: each object is read this many times per round (GETs are cheap: more bytes, less noise). */
const cases = [
  { name: '4+2 1 MiB', bucket: 'plain', size: MiB, count: 64, gets: 4 },
  { name: '4+2 64 MiB', bucket: 'plain', size: 64 * MiB, count: 3, gets: 4 },
  { name: '8+3 1 MiB', bucket: 'wide', size: MiB, count: 64, gets: 4 },
  { name: '8+3 64 MiB', bucket: 'wide', size: 64 * MiB, count: 3, gets: 4 },
  { name: 'small 4 KiB inline', bucket: 'plain', size: 4096, count: 500, gets: 1, perThousand: true },
];

type Mode = { name: string; sealed: boolean; recordBytes?: number };
const modes: Mode[] = [
  { name: 'clear', sealed: false },
  { name: 'sealed', sealed: true },
  ...RECORDS.map((r) => ({ name: `sealed ${r / 1024} KiB`, sealed: true, recordBytes: r })),
];

/** Every mode's gateway runs at once and the rounds alternate between them, so a change in the machine's load falls on all modes alike. */
const gateways: { mode: Mode; g: Awaited<ReturnType<typeof startGateway>>; pid: number; pids: number[]; s3: S3Client }[] = [];
for (const mode of modes) {
  const g = await startGateway(config(mode.sealed, mode.recordBytes));
  const pids = workerdPids().filter((p) => !gateways.some((o) => o.pids.includes(p)));
  const proxy = listenerOf(Number(g.url.port), pids);
  const pid = pids.find((p) => p !== proxy)!;
  const s3: S3Client = g.client({ requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' });
  for (const b of ['plain', 'wide']) await s3.send(new CreateBucketCommand({ Bucket: b }));
  gateways.push({ mode, g, pid, pids, s3 });
}
const results = new Map<string, Map<string, { put: number; get: number }>>(modes.map((m) => [m.name, new Map()]));
try {
  for (const c of cases) {
    const data = new Uint8Array(c.size).map((_, i) => (i * 2654435761) >>> 24);
    const scale = c.perThousand ? 1000 / c.count : GB / (c.size * c.count);
    for (let r = 0; r < REPS + 1; r++) {
      // the first round warms up (not counted)
      for (const { mode, pid, s3 } of gateways) {
        let t = cpuSeconds(pid);
        for (let i = 0; i < c.count; i++) await s3.send(new PutObjectCommand({ Bucket: c.bucket, Key: `o${i}`, Body: data, ContentLength: c.size }));
        const put = (cpuSeconds(pid) - t) * scale;
        t = cpuSeconds(pid);
        for (let n = 0; n < c.gets; n++) {
          for (let i = 0; i < c.count; i++) await (await s3.send(new GetObjectCommand({ Bucket: c.bucket, Key: `o${i}` }))).Body!.transformToByteArray();
        }
        const get = ((cpuSeconds(pid) - t) * scale) / c.gets;
        if (r === 0) continue;
        const best = results.get(mode.name)!.get(c.name) ?? { put: Infinity, get: Infinity };
        results.get(mode.name)!.set(c.name, { put: Math.min(best.put, put), get: Math.min(best.get, get) });
      }
    }
  }
} finally {
  for (const { g } of gateways) await g.dispose();
}

console.log(`encryption cost in workerd: ${cpus()[0]?.model} x${cpus().length}, Node ${process.version}, best of ${REPS} alternating rounds`);
const clear = results.get('clear')!;
for (const mode of modes.slice(1)) {
  console.log(`\n${mode.name} against clear`);
  console.log('case                     PUT clear  PUT sealed  ratio   GET clear  GET sealed  ratio   unit');
  for (const c of cases) {
    const a = clear.get(c.name)!,
      b = results.get(mode.name)!.get(c.name)!;
    const f = (x: number) => x.toFixed(c.perThousand ? 3 : 2).padStart(9);
    const q = (x: number, y: number) => `${(y / x).toFixed(2)}x`.padStart(6);
    console.log(
      `${c.name.padEnd(24)} ${f(a.put)}  ${f(b.put)}  ${q(a.put, b.put)}  ${f(a.get)}  ${f(b.get)}  ${q(a.get, b.get)}   ${c.perThousand ? 'workerd CPU s / 1000 objects' : 'workerd CPU s / GB'}`,
    );
  }
}
process.exit(0);
