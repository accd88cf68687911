/**
 * npm run bench:write-floor [-- --mb N] [--reps N] [--k K --m M] [--gateway [--block-sizes B,...]]
 *
 * The floor under the gateway's own PUT CPU (issue 42's row "<= 3 s/GB at 64 MiB 4+2"): what
 * workerd itself costs, per GB of object data, for each step a coded, sealed PUT cannot skip,
 * each step alone in a Worker of its own (bench/lib/write-floor-worker.ts) doing it as the
 * gateway does: reading the body, MD5 for the ETag, AES-256-GCM sealing, coding and hashing the
 * blocks, and sending (k+m)/k times the data to k+m servers. workerd's CPU (utime + stime of its
 * process, /proc) around each step, the median of --reps; the servers that receive the uploads
 * and the client that sends the body are Node processes outside the measure. The sum of the steps
 * is what any gateway built on these platform calls pays; with `--gateway` the gateway's own
 * figure is measured after it (`bench:peer --only shardgate --backends s3rver --workload "64
 * MiB"`, the row's measure: npm start over six s3rver processes, so workerd runs the gateway
 * alone) and printed beside it, with the ratio; `--block-sizes 262144,1048576` measures it once
 * per policy blockSize (bench:peer --block-size), alternating: what the gateway pays per block.
 * One machine's figures, not a target.
 */
import { spawn } from 'node:child_process';
import { createServer, request, type Server } from 'node:http';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { cpuModel, cpuSeconds, listenerOf, loadAverage, workerdPids } from '../test/support/proc.ts';
import { ROOT, runWorker } from '../test/support/worker.ts';
import { startFront } from '../dev/front.ts';

const { values } = parseArgs({
  options: {
    mb: { type: 'string', default: '256' },
    reps: { type: 'string', default: '5' },
    k: { type: 'string', default: '4' },
    m: { type: 'string', default: '2' },
    gateway: { type: 'boolean' },
    'block-sizes': { type: 'string', default: '262144' },
  },
});
const MB = Number(values.mb);
const REPS = Number(values.reps);
const K = Number(values.k);
const M = Number(values.m);
const MiB = 1024 * 1024;
const GB = 1e9;
const BODY_CHUNK = Buffer.alloc(MiB, 7);

/** A server that reads every byte of each request and answers how many: where the uploads go. */
function startSink(): Promise<Server> {
  const server = createServer((req, res) => {
    let n = 0;
    req.on('data', (d: Buffer) => (n += d.length));
    req.on('end', () => res.end(String(n)));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

/** PUT `mb` MiB to `url` in 1 MiB writes, as a client (or npm start's front) streams a body. */
function putBody(url: URL, mb: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'PUT', headers: { 'content-length': String(mb * MiB) } }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve(text));
    });
    req.on('error', reject);
    let sent = 0;
    const pump = () => {
      while (sent < mb) {
        sent++;
        if (!req.write(BODY_CHUNK)) return void req.once('drain', pump);
      }
      req.end();
    };
    pump();
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

process.env.CLOUDFLARE_CF_FETCH_ENABLED ??= 'false'; // no internet here: miniflare's placeholder
const sinks = await Promise.all(Array.from({ length: K + M }, startSink));
const worker = await runWorker(
  join(ROOT, 'bench/lib/write-floor-worker.ts'),
  {
    prefix: 'shardgate-write-floor-',
    wranglerToml: 'name = "write-floor"\nmain = "worker.mjs"\ncompatibility_date = "2026-04-20"\ncompatibility_flags = ["nodejs_compat"]\n',
  },
  {},
);
const front = await startFront(0, ['127.0.0.1'], { upstream: worker.url });
const viaFront = (path: string) => new URL(path, `http://127.0.0.1:${front.port}`);
const sinkQuery = sinks.map((s) => `sink=${encodeURIComponent(`http://127.0.0.1:${(s.address() as { port: number }).port}/shard`)}`).join('&');
/** One step: `run(mb)` answers the Worker's text, which `answered` accepts (by default any result but the 404); `aside`: printed, not summed (npm start's front is not part of a deployed gateway). */
interface Step {
  name: string;
  run: (mb: number) => Promise<string>;
  answered?: (text: string) => boolean;
  aside?: boolean;
}
/** A step's answer: the Worker's result (a byte count, a digest), not its 404. */
const anAnswer = (text: string) => text !== '' && !text.startsWith('no such');
const steps: Step[] = [
  { name: 'read the body (BYOB, 1 MiB buffer)', run: (mb) => putBody(new URL('/read', worker.url), mb) },
  { name: "read the body through npm start's front (dev/front.ts; not in the sum)", run: (mb) => putBody(viaFront('/read'), mb), aside: true },
  { name: 'MD5 for the ETag (node:crypto)', run: (mb) => fetch(new URL(`/md5?mb=${mb}`, worker.url)).then((r) => r.text()) },
  { name: 'seal: AES-256-GCM, 256 KiB records', run: (mb) => fetch(new URL(`/seal?mb=${mb}`, worker.url)).then((r) => r.text()) },
  { name: `code ${K}+${M} and XXH64 every block (wasm)`, run: (mb) => fetch(new URL(`/code?mb=${mb}&k=${K}&m=${M}`, worker.url)).then((r) => r.text()) },
  {
    name: `send ${((K + M) / K).toFixed(2)}x to ${K + M} servers (fetch, 256 KiB writes)`,
    run: (mb) => fetch(new URL(`/upload?mb=${mb}&k=${K}&m=${M}&${sinkQuery}`, worker.url)).then((r) => r.text()),
  },
];
const chainStep: Step = {
  name: 'the steps chained in one plain loop (body in, uploads out)',
  run: (mb) => putBody(new URL(`/chain?k=${K}&m=${M}&${sinkQuery}`, worker.url), mb),
  answered: (text) => /^\d+$/.test(text),
};

/** workerd's CPU per GB for each of REPS runs of `step` over MB MiB, after one warming run of 16 MiB (JIT, wasm compile, connections). */
async function measure(pid: number, step: Step): Promise<number[]> {
  await step.run(16);
  const figures: number[] = [];
  for (let r = 0; r < REPS; r++) {
    const c0 = cpuSeconds(pid);
    const answer = await step.run(MB);
    if (!(step.answered ?? anAnswer)(answer)) throw new Error(`${step.name}: ${answer}`);
    figures.push((cpuSeconds(pid) - c0) / ((MB * MiB) / GB));
  }
  return figures;
}

const row = (name: string, figures: number[]) =>
  `| ${name} | ${median(figures).toFixed(2)} | ${Math.min(...figures).toFixed(2)}-${Math.max(...figures).toFixed(2)} |`;

let floor: number;
let chained: number;
try {
  const pid = listenerOf(Number(worker.url.port), workerdPids());
  if (pid === undefined) throw new Error(`no workerd process listens on ${worker.url}`);
  console.log(`bench:write-floor: ${MB} MiB per step, ${REPS} reps (median), ${K}+${M}; ${cpuModel()}, Node ${process.version}; load average ${loadAverage()}`);
  const rows: { step: Step; figures: number[] }[] = [];
  for (const step of steps) rows.push({ step, figures: await measure(pid, step) });
  floor = rows.reduce((n, r) => n + (r.step.aside ? 0 : median(r.figures)), 0);
  // The steps chained in one plain loop (no streams of our own): what is left above it is plumbing.
  const chain = await measure(pid, chainStep);
  chained = median(chain);
  console.log('\n| step (workerd CPU per GB of object data) | s/GB (median) | range |\n|---|---:|---|');
  for (const r of rows) console.log(row(r.step.name, r.figures));
  console.log(`| **the floor: the steps' sum** | **${floor.toFixed(2)}** | |`);
  console.log(row(chainStep.name, chain));
} finally {
  await front.close().catch(() => {});
  await worker.dispose().catch(() => {});
  for (const s of sinks) s.close();
}
if (values.gateway)
  for (const blockSize of values['block-sizes']!.split(',').map(Number)) {
    const figure = await gatewayPutCpu(blockSize);
    console.log(
      `\ngateway (npm start over six s3rver processes, 64 MiB PUTs, 4+2, blockSize ${blockSize / 1024} KiB): workerd ${figure.toFixed(2)} s/GB = ${(figure / floor).toFixed(2)}x the floor, ${(figure / chained).toFixed(2)}x the chained loop`,
    );
  }

/** The gateway's workerd CPU per GB of 64 MiB PUTs: bench:peer's batches, median. */
function gatewayPutCpu(blockSize: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        join(ROOT, 'bench/peer.ts'),
        '--only',
        'shardgate',
        '--backends',
        's3rver',
        '--workload',
        '64 MiB',
        '--reps',
        String(REPS),
        '--block-size',
        String(blockSize),
        '--json',
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const perGB: number[] = [];
    let buffered = '';
    child.stdout!.on('data', (d: Buffer) => {
      buffered += d;
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) {
        const b = JSON.parse(line) as { kind: string; op?: string; bytes?: number; cpu?: Record<string, number> };
        if (b.kind === 'batch' && b.op === 'PUT') perGB.push(b.cpu!.workerd! / (b.bytes! / GB));
      }
    });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 && perGB.length > 0 ? resolve(median(perGB)) : reject(new Error(`bench:peer exited ${code}`))));
  });
}
