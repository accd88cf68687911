/**
 * What encryption costs in workerd (issue 24): the gateway's workerd CPU seconds per GB of PUT
 * and GET, sealed (the development key) against clear (no `encryption`), for 4+2 and 8+3 at
 * 1 MiB and 64 MiB, and per 1000 small (4 KiB, inline) PUTs and GETs. The gateway runs in
 * workerd (wrangler dev, as the tests run it) over eleven memory backends, so the figures are
 * the Worker's own work, not a backend's. One gateway per mode, each case best of --reps.
 *   usage: npm run bench:encryption:workerd [-- --reps N]
 */
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { startGateway, TEST_ENCRYPTION } from '../test/engine-s3rver/gateway-harness.ts';
import { cpuSeconds, listenerOf, workerdPids } from '../test/support/proc.ts';

const { values } = parseArgs({ options: { reps: { type: 'string' } } });
const REPS = Number(values.reps ?? 2);
const MiB = 1024 * 1024;
const GB = 1e9;

function config(sealed: boolean): object {
  return {
    backends: Array.from({ length: 11 }, (_, i) => ({ id: `mem-${i}`, kind: 'memory', domain: `memory/zone-${i}` })),
    policies: { 'ec-4-2': { k: 4, m: 2 }, 'ec-8-3': { k: 8, m: 3 } },
    defaultPolicy: 'ec-4-2',
    buckets: { wide: 'ec-8-3' },
    credentials: [{ accessKeyId: 'shardgate-dev', secretAccessKey: 'shardgate-dev-secret' }],
    maxObjectSize: 128 * MiB,
    ...(sealed ? { encryption: TEST_ENCRYPTION } : {}),
  };
}

const cases = [
  { name: '4+2 1 MiB', bucket: 'plain', size: MiB, count: 64 },
  { name: '4+2 64 MiB', bucket: 'plain', size: 64 * MiB, count: 3 },
  { name: '8+3 1 MiB', bucket: 'wide', size: MiB, count: 64 },
  { name: '8+3 64 MiB', bucket: 'wide', size: 64 * MiB, count: 3 },
  { name: 'small 4 KiB inline', bucket: 'plain', size: 4096, count: 500, perThousand: true },
];

async function run(sealed: boolean): Promise<Map<string, { put: number; get: number }>> {
  const g = await startGateway(config(sealed));
  const out = new Map<string, { put: number; get: number }>();
  try {
    const pids = workerdPids();
    const proxy = listenerOf(Number(g.url.port), pids);
    const pid = pids.find((p) => p !== proxy)!;
    const s3: S3Client = g.client({ requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' });
    for (const b of ['plain', 'wide']) await s3.send(new CreateBucketCommand({ Bucket: b }));
    for (const c of cases) {
      const data = new Uint8Array(c.size).map((_, i) => (i * 2654435761) >>> 24);
      let best = { put: Infinity, get: Infinity };
      for (let r = 0; r < REPS + 1; r++) { // the first round warms up (not counted)
        let t = cpuSeconds(pid);
        for (let i = 0; i < c.count; i++) await s3.send(new PutObjectCommand({ Bucket: c.bucket, Key: `o${i}`, Body: data, ContentLength: c.size }));
        const put = cpuSeconds(pid) - t;
        t = cpuSeconds(pid);
        for (let i = 0; i < c.count; i++) await (await s3.send(new GetObjectCommand({ Bucket: c.bucket, Key: `o${i}` }))).Body!.transformToByteArray();
        const get = cpuSeconds(pid) - t;
        const scale = c.perThousand ? 1000 / c.count : GB / (c.size * c.count);
        if (r > 0) best = { put: Math.min(best.put, put * scale), get: Math.min(best.get, get * scale) };
      }
      out.set(c.name, best);
    }
  } finally {
    await g.dispose();
  }
  return out;
}

const clear = await run(false);
const sealed = await run(true);
console.log(`encryption cost in workerd: ${cpus()[0]?.model} x${cpus().length}, Node ${process.version}, best of ${REPS}`);
console.log('case                     PUT clear  PUT sealed  ratio   GET clear  GET sealed  ratio   unit');
for (const c of cases) {
  const a = clear.get(c.name)!, b = sealed.get(c.name)!;
  const f = (x: number) => x.toFixed(c.perThousand ? 3 : 2).padStart(9);
  const r = (x: number, y: number) => `${(y / x).toFixed(2)}x`.padStart(6);
  console.log(`${c.name.padEnd(24)} ${f(a.put)}  ${f(b.put)}  ${r(a.put, b.put)}  ${f(a.get)}  ${f(b.get)}  ${r(a.get, b.get)}   ${c.perThousand ? 'workerd CPU s / 1000 objects' : 'workerd CPU s / GB'}`);
}
process.exit(0);
