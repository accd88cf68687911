/**
 * npm run bench:isolate-memory [-- POLICY|npm-start [N [MiB]]]   (default: 8+3 32 4; PROBE_GC=1: live only)
 *
 * What one gateway isolate holds during a burst of N concurrent PUTs of MiB each (issue 42:
 * workerd's RSS mixes the isolate with the runtime's own buffers and, under `npm start`, the R2
 * emulation): the bench's gateway (bench/lib/gateway.ts: its workerd process, found by its
 * listening port; no repair consumer) over k+m s3rver processes (`npm-start`: npm start's own
 * config, its local R2 buckets in the same workerd, the dev key), its V8 heap and ArrayBuffer
 * backing stores (wasm memory included) read through the inspector (`Runtime.getHeapUsage`) every
 * 20 ms, beside workerd's RSS; two bursts, after three warm-up PUTs. With PROBE_GC=1 every sample
 * is taken after a full collection (`HeapProfiler.collectGarbage`): what is live, not garbage
 * waiting for the collector. Peaks above the idle figures; one machine's figures, a few percent
 * of CPU for the sampling.
 */
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { makeClient, bodyOf } from './lib/client.ts';
import { buildBundle, startGateway } from './lib/gateway.ts';
import { devtoolsSession } from '../test/support/devtools.ts';
import { s3BackendConfig, startS3rvers } from './lib/s3rver.ts';
import { rssBytes } from '../test/support/proc.ts';
import { devConfigSource } from '../dev/dev-config.ts';

const POLICY = process.argv[2] ?? '8+3';
const N = Number(process.argv[3] ?? 32);
const SIZE = Number(process.argv[4] ?? 4) * 1024 * 1024;
const NPM_START = POLICY === 'npm-start';
const [k, m] = NPM_START ? [0, 0] : (POLICY.split('+').map(Number) as [number, number]);
const bundle = await buildBundle();
const servers = NPM_START ? [] : await startS3rvers(k + m);
const config: object = NPM_START
  ? JSON.parse(devConfigSource())
  : {
      region: 'us-east-1',
      backends: servers.map((s, i) => s3BackendConfig(s, i)),
      policies: { p: { k, m } },
      defaultPolicy: 'p',
      credentials: [{ accessKeyId: 'probe', secretAccessKey: 'probe-secret' }],
      garbageGraceSeconds: 3600,
    };
const credentials = NPM_START
  ? { accessKeyId: 'shardgate-dev', secretAccessKey: 'shardgate-dev-secret' }
  : { accessKeyId: 'probe', secretAccessKey: 'probe-secret' };
const worker = await startGateway(bundle, config, { inspector: true });
try {
  const rss = () => rssBytes(worker.pid) ?? 0;
  const session = await devtoolsSession(worker.inspectorUrl!);
  await session.call('Runtime.enable');
  const GC = process.env.PROBE_GC === '1';
  const heap = async () => {
    if (GC) await session.call('HeapProfiler.collectGarbage');
    return await session.call<Record<string, number>>('Runtime.getHeapUsage');
  };
  const s3w = makeClient({ endpoint: worker.origin, credentials }, 'unsigned', 1);
  await s3w.send(new CreateBucketCommand({ Bucket: 'probe' }));
  for (let i = 0; i < 3; i++) await s3w.send(new PutObjectCommand({ Bucket: 'probe', Key: `w${i}`, Body: bodyOf(SIZE, i, 'unsigned'), ContentLength: SIZE }));
  s3w.destroy();
  await new Promise((r) => setTimeout(r, 1000));
  const idleRss = rss();
  const idleHeap = await heap();
  console.log(
    'idle',
    (idleRss / 2 ** 20).toFixed(0),
    'MiB rss; heap',
    JSON.stringify(Object.fromEntries(Object.entries(idleHeap).map(([a, b]) => [a, +(b / 2 ** 20).toFixed(1)]))),
  );
  for (const round of [1, 2]) {
    const s3 = makeClient({ endpoint: worker.origin, credentials }, 'unsigned', N);
    let peakRss = 0;
    const peakHeap: Record<string, number> = {};
    let done = false;
    const sampler = (async () => {
      while (!done) {
        peakRss = Math.max(peakRss, rss());
        const h = await heap();
        for (const [a, b] of Object.entries(h)) peakHeap[a] = Math.max(peakHeap[a] ?? 0, b);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: N }, (_, i) =>
        s3.send(new PutObjectCommand({ Bucket: 'probe', Key: `r${round}-${i}`, Body: bodyOf(SIZE, i, 'unsigned'), ContentLength: SIZE })),
      ),
    );
    done = true;
    await sampler;
    s3.destroy();
    console.log(
      `${POLICY} round ${round}: ${N} x ${SIZE / 2 ** 20} MiB PUT in ${((performance.now() - t0) / 1000).toFixed(1)} s; peak rss above idle ${((peakRss - idleRss) / 2 ** 20).toFixed(0)} MiB; peak heap`,
      JSON.stringify(Object.fromEntries(Object.entries(peakHeap).map(([a, b]) => [a, +(b / 2 ** 20).toFixed(1)]))),
    );
    await new Promise((r) => setTimeout(r, 1000));
  }
  session.close();
} finally {
  await worker.dispose();
  await bundle.dispose();
  await Promise.all(servers.map((s) => s.dispose()));
}
