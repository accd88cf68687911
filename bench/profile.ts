/**
 * npm run bench:profile [-- --size BYTES] [--count N] [--op put|get] [--backends r2|memory|s3rver] [--top N] [--callers N] [--save FILE]
 *
 * Where the Worker's CPU goes for one kind of request (issue 42): the gateway with npm start's
 * config (its R2 backends, or the same ids over memory backends or six s3rver processes) in workerd with the DevTools
 * inspector on; N requests of one size from the AWS SDK (UNSIGNED-PAYLOAD, as bench:peer), with
 * V8's sampling profiler running (100 µs) over exactly those; then the functions with the most
 * self time, the callers of the first `--callers` of them (platform functions such as a hash's
 * update or clearTimeout say little until their caller is known), and the source files by self
 * time, with their share. One isolate runs the gateway,
 * the catalog's Durable Objects and (with r2) miniflare's R2 emulation is elsewhere: only this
 * Worker's JavaScript and WebAssembly are sampled, not workerd's C++ outside V8 (I/O, SQLite,
 * streams), which shows as "(program)" or not at all. Figures of one machine, for finding work,
 * not for comparing runs.
 */
import { GetObjectCommand, PutObjectCommand, CreateBucketCommand } from '@aws-sdk/client-s3';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { makeClient, bodyOf } from './lib/client.ts';
import { devConfigSource, memoryBackendsConfig } from '../dev/dev-config.ts';
import { readFileSync, writeFileSync } from 'node:fs';
import { bundleWorker, LOCAL_DEV, ROOT, startWorker } from '../test/support/worker.ts';
import { devtoolsSession } from '../test/support/devtools.ts';
import { s3rverBackendsConfig, startS3rvers } from './lib/s3rver.ts';

const { values } = parseArgs({
  options: {
    size: { type: 'string', default: String(64 * 1024) },
    count: { type: 'string', default: '300' },
    op: { type: 'string', default: 'put' },
    backends: { type: 'string', default: 'r2' },
    top: { type: 'string', default: '40' },
    callers: { type: 'string', default: '8' },
    /** Also write the raw profile (a .cpuprofile: Chrome DevTools' Performance panel opens it). */
    save: { type: 'string' },
  },
});
const SIZE = Number(values.size);
const COUNT = Number(values.count);

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

process.env.CLOUDFLARE_CF_FETCH_ENABLED ??= 'false'; // no internet here: miniflare's placeholder
const bundle = await bundleWorker(join(ROOT, 'worker/index.ts'), { prefix: 'shardgate-profile-' });
/** The bundle's line -> the source module it came from (esbuild marks each module's start with a `// path` line). */
const moduleOfLine: string[] = [];
{
  let current = '(bundle)';
  for (const line of readFileSync(bundle.entry, 'utf8').split('\n')) {
    const m = /^\/\/ (\S+\.(?:ts|js|mjs|cjs))$/.exec(line);
    if (m) current = m[1]!.replace(/^.*node_modules\/(@[^/]+\/[^/]+|[^/]+)\/.*$/, 'node_modules/$1');
    moduleOfLine.push(current);
  }
}
const servers = values.backends === 's3rver' ? await startS3rvers(6) : [];
const configText =
  values.backends === 'memory'
    ? memoryBackendsConfig()
    : values.backends === 's3rver'
      ? s3rverBackendsConfig(servers, memoryBackendsConfig())
      : devConfigSource();
const worker = await startWorker(bundle, {
  config: join(ROOT, 'wrangler.toml'),
  bindings: { ...LOCAL_DEV, SHARDGATE_CONFIG: { type: 'plain_text', value: configText } },
  persist: true,
  inspector: true,
});
try {
  const s3 = makeClient({ endpoint: worker.url.origin, credentials: { accessKeyId: 'shardgate-dev', secretAccessKey: 'shardgate-dev-secret' } }, 'unsigned', 1);
  await s3.send(new CreateBucketCommand({ Bucket: 'profile' }));
  const put = (i: number) => s3.send(new PutObjectCommand({ Bucket: 'profile', Key: `k${i}`, Body: bodyOf(SIZE, i, 'unsigned'), ContentLength: SIZE }));
  for (let i = 0; i < 20; i++) await put(i); // warm: the isolate's first requests compile and migrate
  if (values.op === 'get') for (let i = 0; i < COUNT; i++) await put(i);
  const session = await devtoolsSession(worker.inspectorUrl!);
  await session.call('Profiler.enable');
  await session.call('Profiler.setSamplingInterval', { interval: 100 });
  await session.call('Profiler.start');
  const t0 = performance.now();
  for (let i = 0; i < COUNT; i++) {
    if (values.op === 'get') {
      const res = await s3.send(new GetObjectCommand({ Bucket: 'profile', Key: `k${i}` }));
      for await (const _ of res.Body as AsyncIterable<Uint8Array>);
    } else await put(i);
  }
  const wallMs = performance.now() - t0;
  const { profile } = await session.call<{ profile: Profile }>('Profiler.stop');
  session.close();
  s3.destroy();
  if (values.save) writeFileSync(values.save, JSON.stringify(profile));
  report(profile, wallMs);
} finally {
  await worker.dispose();
  await bundle.dispose();
  await Promise.all(servers.map((s) => s.dispose()));
}

function report(p: Profile, wallMs: number): void {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  for (let i = 0; i < p.samples.length; i++) self.set(p.samples[i]!, (self.get(p.samples[i]!) ?? 0) + (p.timeDeltas[i] ?? 0));
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const idle = [...self].filter(([id]) => byId.get(id)!.callFrame.functionName === '(idle)').reduce((a, [, t]) => a + t, 0);
  const busy = total - idle;
  /** A node's source file (the module of the bundle's line), and its function with that file. */
  const whereOf = (id: number) => {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    return url.endsWith('worker.mjs') ? (moduleOfLine[lineNumber] ?? '(bundle)') : url || functionName;
  };
  const nameOf = (id: number) => `${byId.get(id)!.callFrame.functionName || '(anonymous)'}  ${whereOf(id)}`;
  const fn = new Map<string, number>();
  const file = new Map<string, number>();
  for (const [id, t] of self) {
    if (byId.get(id)!.callFrame.functionName === '(idle)') continue;
    const name = nameOf(id);
    const where = whereOf(id);
    fn.set(name, (fn.get(name) ?? 0) + t);
    file.set(where, (file.get(where) ?? 0) + t);
  }
  const byTime = [...fn].sort((a, b) => b[1] - a[1]);
  const ms = (us: number) => (us / 1000).toFixed(1);
  console.log(
    `${COUNT} ${values.op} of ${SIZE} bytes (${values.backends} backends): wall ${wallMs.toFixed(0)} ms; sampled busy ${ms(busy)} ms = ${(busy / 1000 / COUNT).toFixed(2)} ms per request (idle ${ms(idle)} ms)`,
  );
  const top = Number(values.top);
  console.log('\nself time by function');
  for (const [k, t] of byTime.slice(0, top)) console.log(`${((100 * t) / busy).toFixed(1).padStart(5)}%  ${ms(t).padStart(8)} ms  ${k}`);
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  for (const [k] of byTime.slice(0, Number(values.callers))) {
    const callers = new Map<string, number>();
    for (const [id, t] of self) {
      if (nameOf(id) !== k) continue;
      const up = parent.get(id);
      const caller = up === undefined ? '(root)' : nameOf(up);
      callers.set(caller, (callers.get(caller) ?? 0) + t);
    }
    console.log(`\ncallers of ${k}`);
    for (const [c, t] of [...callers].sort((a, b) => b[1] - a[1]).slice(0, 5)) console.log(`${((100 * t) / busy).toFixed(1).padStart(5)}%  ${c}`);
  }
  console.log('\nself time by file');
  for (const [k, t] of [...file].sort((a, b) => b[1] - a[1]).slice(0, 25))
    console.log(`${((100 * t) / busy).toFixed(1).padStart(5)}%  ${ms(t).padStart(8)} ms  ${k}`);
}
