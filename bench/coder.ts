/**
 * npm run bench:coder [-- --json] [--native] [--quick]
 * Coder throughput per kernel and shape, GB/s of data (k x shard bytes per second): encode,
 * reconstruct with 1 and m data shards lost, and each checksum. Warm, median of RUNS runs, each
 * run long enough to time reliably. --native adds ISA-L (C, built here against Debian's
 * libisal-dev) in the same run with the ratio. Never part of `npm test`.
 */
import { cpus } from 'node:os';
import { KERNELS, availableKernels, checksums, createCoder, type KernelName } from '../coder-wasm/index.ts';
import { runIsal } from './isal.ts';

const args = new Set(process.argv.slice(2));
const JSON_OUT = args.has('--json');
const QUICK = args.has('--quick');
const SHAPES: [number, number][] = QUICK
  ? [[4, 2]]
  : [
      [4, 2],
      [6, 3],
      [8, 3],
      [10, 4],
      [12, 4],
    ];
const SIZES = QUICK ? [64 * 1024] : [1024 * 1024, 64 * 1024];
const RUNS = QUICK ? 3 : 7;
const TARGET_SECONDS = QUICK ? 0.02 : 0.15;

interface Row {
  kernel: string;
  op: string;
  k: number;
  m: number;
  shardBytes: number;
  gbps: number;
}
const rows: Row[] = [];

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1]!;
}

/** Median GB/s of `fn`, which processes `bytes` bytes per call. */
function measure(bytes: number, fn: () => void): number {
  for (let i = 0; i < 3; i++) fn();
  let iters = 1;
  for (;;) {
    const t = performance.now();
    for (let i = 0; i < iters; i++) fn();
    if ((performance.now() - t) / 1000 > TARGET_SECONDS / 4) break;
    iters *= 2;
  }
  const results: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    const t = performance.now();
    for (let i = 0; i < iters; i++) fn();
    results.push((bytes * iters) / ((performance.now() - t) / 1000) / 1e9);
  }
  return median(results);
}

function record(row: Row) {
  rows.push(row);
  if (JSON_OUT) console.log(JSON.stringify({ ...row, gbps: +row.gbps.toFixed(3) }));
}

function fill(buf: Uint8Array, seed: number) {
  let x = seed | 1;
  const w = new Uint32Array(buf.buffer, buf.byteOffset, buf.length >>> 2);
  for (let i = 0; i < w.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    w[i] = x;
  }
}

function benchKernel(kernel: KernelName) {
  for (const shardBytes of SIZES) {
    for (const [k, m] of SHAPES) {
      const coder = createCoder(k, m, { kernel });
      const s = coder.stripe(shardBytes);
      for (let i = 0; i < k; i++) fill(s.shard(i), i + 1);
      const data = k * shardBytes;
      record({ kernel, op: 'encode', k, m, shardBytes, gbps: measure(data, () => s.encode()) });
      s.encode();
      const lose = (n: number) => Array.from({ length: k + m }, (_, i) => i >= n);
      const one = lose(1),
        all = lose(m);
      record({ kernel, op: 'reconstruct-1', k, m, shardBytes, gbps: measure(data, () => s.reconstruct(one, { dataOnly: true })) });
      record({ kernel, op: `reconstruct-${m}`, k, m, shardBytes, gbps: measure(data, () => s.reconstruct(all, { dataOnly: true })) });
      if (!s.verify()) throw new Error(`${kernel} ${k}+${m}: reconstruct broke the stripe`);
      s.free();
      coder.free();
    }
  }
}

function benchChecksums(kernel: KernelName) {
  const c = checksums(kernel);
  const buf = new Uint8Array(QUICK ? 1 << 20 : 16 << 20);
  fill(buf, 7);
  const base = { kernel, k: 0, m: 0, shardBytes: buf.length };
  record({ ...base, op: 'crc32', gbps: measure(buf.length, () => c.crc32(buf)) });
  record({ ...base, op: 'crc32c', gbps: measure(buf.length, () => c.crc32c(buf)) });
  record({ ...base, op: 'crc64nvme', gbps: measure(buf.length, () => c.crc64nvme(buf)) });
  record({ ...base, op: 'xxh64', gbps: measure(buf.length, () => c.xxh64(buf)) });
  // In place, as the shard writer hashes blocks: no staging copy.
  const coder = createCoder(1, 0, { kernel });
  const s = coder.stripe(buf.length);
  s.shard(0).set(buf);
  record({ ...base, op: 'xxh64-in-place', gbps: measure(buf.length, () => s.xxh64(0, 0, buf.length)) });
  s.free();
  if (kernel === KERNELS[0]) {
    const native = checksums();
    if (native.crc32Impl === 'native') record({ ...base, kernel: 'node:zlib', op: 'crc32', gbps: measure(buf.length, () => native.crc32(buf)) });
  }
}

const kernels = availableKernels();
const cpu = cpus()[0]?.model ?? 'unknown cpu';
if (!JSON_OUT) console.log(`# bench:coder  ${cpu}, ${cpus().length} cores, Node ${process.version}, kernels: ${kernels.join(', ')}\n`);
for (const kernel of kernels) {
  if (kernel === 'scalar' && !QUICK) {
    // The scalar fallback is ~10x slower: measure only 4+2 so the run stays short.
    const save = SHAPES.splice(1);
    benchKernel(kernel);
    SHAPES.push(...save);
  } else benchKernel(kernel);
  benchChecksums(kernel);
}
if (args.has('--native')) {
  for (const r of runIsal(SHAPES, SIZES, QUICK)) record(r);
}

if (!JSON_OUT) {
  const ops = [...new Set(rows.filter((r) => r.k > 0).map((r) => r.op.replace(/-\d+$/, (s) => (s === '-1' ? '-1' : '-m'))))];
  console.log('GB/s of data (k x shard bytes per second), median of', RUNS, 'runs');
  console.log(['kernel'.padEnd(13), 'shape', 'shard'.padStart(8), ...ops.map((o) => o.padStart(15))].join(' '));
  const key = (r: Row) => `${r.kernel}|${r.k}+${r.m}|${r.shardBytes}`;
  for (const id of [...new Set(rows.filter((r) => r.k > 0).map(key))]) {
    const rs = rows.filter((r) => key(r) === id);
    const [kernel, shape, size] = id.split('|');
    const cells = ops.map((o) => {
      const r = rs.find((x) => x.op.replace(/-\d+$/, (s) => (s === '-1' ? '-1' : '-m')) === o);
      return (r ? r.gbps.toFixed(2) : '-').padStart(15);
    });
    console.log([kernel!.padEnd(13), shape!.padEnd(5), `${+size! >> 10}K`.padStart(8), ...cells].join(' '));
  }
  const anchor = (r: Row, kernel: string) =>
    rows.find((x) => x.kernel === kernel && x.op === r.op && x.k === r.k && x.m === r.m && x.shardBytes === r.shardBytes);
  if (rows.some((r) => r.kernel === 'isa-l')) {
    console.log('\nratio to ISA-L (same shape, size and op): to its default dispatch (the widest vectors the CPU has),');
    console.log('and to its 128-bit AVX kernel (VEX pshufb nibble tables: the width and method wasm SIMD has)');
    for (const r of rows.filter((r) => r.kernel === 'relaxed-simd' && r.k > 0)) {
      const [n, narrow] = [anchor(r, 'isa-l'), anchor(r, 'isa-l-avx128')];
      if (n && narrow)
        console.log(
          `  relaxed-simd ${r.op} ${r.k}+${r.m} ${r.shardBytes >> 10}K: ${(r.gbps / n.gbps).toFixed(2)}x (ISA-L ${n.gbps.toFixed(2)} GB/s), ${(r.gbps / narrow.gbps).toFixed(2)}x of its 128-bit kernel (${narrow.gbps.toFixed(2)} GB/s)`,
        );
    }
  }
  console.log('\nchecksums, GB/s (16 MiB buffer)');
  for (const r of rows.filter((r) => r.k === 0)) console.log(`  ${r.kernel.padEnd(13)} ${r.op.padEnd(15)} ${r.gbps.toFixed(2)}`);
}
