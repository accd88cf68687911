/**
 * CoderRuntime: one instance of a coder module (one kernel) and its memory. Each isolate loads
 * the module once (`coderRuntime()`), preferring relaxed SIMD, then simd128, then scalar, and
 * only after a start-up self-test: a kernel that does not reproduce pinned ISA-L parity is
 * refused, never used.
 */

export type KernelName = 'relaxed-simd' | 'simd128' | 'scalar';
export const KERNELS: readonly KernelName[] = ['relaxed-simd', 'simd128', 'scalar'];

/** Per kernel, a loader returning the compiled module, or null where the engine rejects it. */
export type CoderModules = Record<KernelName, () => WebAssembly.Module | null>;

export interface CoderExports {
  memory: WebAssembly.Memory;
  sg_alloc(size: number): number;
  sg_free(ptr: number, size: number): void;
  sg_set_kernel(kernel: number): number;
  sg_coder_new(k: number, m: number): number;
  sg_coder_free(coder: number): void;
  sg_encode(coder: number, base: number, stride: number, len: number): void;
  sg_encode_update(coder: number, dataIndex: number, src: number, parityBase: number, stride: number, len: number): void;
  sg_mul_add(coeffs: number, count: number, src: number, outBase: number, stride: number, len: number): void;
  sg_reconstruct(coder: number, base: number, stride: number, len: number, present: number, dataOnly: number): number;
  sg_verify(coder: number, base: number, stride: number, len: number): number;
  sg_crc32(prev: number, ptr: number, len: number): number;
  sg_crc32c(prev: number, ptr: number, len: number): number;
  sg_crc64nvme(prev: bigint, ptr: number, len: number): bigint;
  sg_crc32_combine(a: number, b: number, lenB: bigint): number;
  sg_crc32c_combine(a: number, b: number, lenB: bigint): number;
  sg_crc64nvme_combine(a: bigint, b: bigint, lenB: bigint): bigint;
  sg_xxh64(ptr: number, len: number, seed: bigint): bigint;
}

export class CoderError extends Error {
  constructor(
    readonly kind: 'InvalidShape' | 'TooFewShards' | 'InvalidArgument' | 'OutOfMemory' | 'SelfTestFailed' | 'NoKernel',
    message: string,
  ) {
    super(message);
    this.name = 'CoderError';
  }
}

/** Bytes staged through wasm memory per call when hashing data that lives outside it. */
const SCRATCH_BYTES = 256 * 1024;

export class CoderRuntime {
  readonly exports: CoderExports;
  private scratchPtr = 0;

  constructor(
    readonly kernel: KernelName,
    module: WebAssembly.Module,
  ) {
    // A plain copy of the (frozen) exports object, so tests can interpose on a call.
    this.exports = { ...new WebAssembly.Instance(module, {}).exports } as unknown as CoderExports;
    // The scalar kernel inside a SIMD build is selectable for differential tests only.
    this.exports.sg_set_kernel(kernel === 'scalar' ? 0 : 1);
  }

  /** A fresh view: wasm memory growth detaches earlier views. */
  bytes(ptr: number, len: number): Uint8Array {
    return new Uint8Array(this.exports.memory.buffer, ptr, len);
  }

  alloc(size: number): number {
    const ptr = this.exports.sg_alloc(size);
    if (ptr === 0) throw new CoderError('OutOfMemory', `cannot allocate ${size} bytes of wasm memory`);
    return ptr;
  }

  free(ptr: number, size: number): void {
    this.exports.sg_free(ptr, size);
  }

  /** Runs `fn` over `data` staged through a reused scratch buffer, piece by piece. */
  staged<T>(data: Uint8Array, init: T, fn: (acc: T, ptr: number, len: number) => T): T {
    if (this.scratchPtr === 0) this.scratchPtr = this.alloc(SCRATCH_BYTES);
    let acc = init;
    for (let off = 0; off < data.length || (off === 0 && data.length === 0); off += SCRATCH_BYTES) {
      const piece = data.subarray(off, off + SCRATCH_BYTES);
      this.bytes(this.scratchPtr, piece.length).set(piece);
      acc = fn(acc, this.scratchPtr, piece.length);
      if (data.length === 0) break;
    }
    return acc;
  }

  /** Copies `data` into wasm memory for one call that needs it whole (freed afterwards). */
  withCopy<T>(data: Uint8Array, fn: (ptr: number) => T): T {
    const ptr = this.alloc(data.length);
    try {
      this.bytes(ptr, data.length).set(data);
      return fn(ptr);
    } finally {
      this.free(ptr, data.length);
    }
  }
}

/** xorshift32 bytes, as the known-answer vectors generate their data. */
export function xorshiftBytes(seed: number, len: number): Uint8Array {
  const out = new Uint8Array(len);
  let x = seed >>> 0;
  for (let i = 0; i < len; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x >>> 24;
  }
  return out;
}

/**
 * Encodes the ISA-L vector k4-m2-len1000 (seed 2651483503) and rebuilds two lost shards; the
 * CRC32s of parity and data are pinned from that vector. Also checks the CRC check values.
 */
export function selfTest(rt: CoderRuntime): string | null {
  const x = rt.exports;
  const k = 4,
    m = 2,
    len = 1000;
  const coder = x.sg_coder_new(k, m);
  const base = rt.alloc((k + m) * len);
  const present = rt.alloc(k + m);
  try {
    rt.bytes(base, k * len).set(xorshiftBytes(2651483503, k * len));
    x.sg_encode(coder, base, len, len);
    if (x.sg_crc32(0, base + k * len, m * len) >>> 0 !== 0xb76588d9) return 'encode does not match ISA-L';
    if (x.sg_verify(coder, base, len, len) !== 1) return 'verify rejects a good stripe';
    rt.bytes(base + 1 * len, len).fill(0);
    rt.bytes(base + 4 * len, len).fill(0);
    rt.bytes(present, k + m).set([1, 0, 1, 1, 0, 1]);
    if (x.sg_reconstruct(coder, base, len, len, present, 0) !== 0) return 'reconstruct refused';
    if (x.sg_crc32(0, base, k * len) >>> 0 !== 0xe11e196a) return 'reconstructed data differs';
    if (x.sg_crc32(0, base + k * len, m * len) >>> 0 !== 0xb76588d9) return 'reconstructed parity differs';
    const check = rt.alloc(9);
    rt.bytes(check, 9).set(new TextEncoder().encode('123456789'));
    const ok =
      x.sg_crc32(0, check, 9) >>> 0 === 0xcbf43926 &&
      x.sg_crc32c(0, check, 9) >>> 0 === 0xe3069283 &&
      BigInt.asUintN(64, x.sg_crc64nvme(0n, check, 9)) === 0xae8b14860a799888n;
    rt.free(check, 9);
    return ok ? null : 'checksum check values differ';
  } finally {
    rt.free(base, (k + m) * len);
    rt.free(present, k + m);
    x.sg_coder_free(coder);
  }
}

/** Loads and self-tests one kernel; null when the engine cannot run it. Throws if it runs wrong. */
export function loadRuntime(modules: CoderModules, kernel: KernelName): CoderRuntime | null {
  let module: WebAssembly.Module | null;
  try {
    module = modules[kernel]();
  } catch {
    return null;
  }
  if (!module) return null;
  const rt = new CoderRuntime(kernel, module);
  const failure = selfTest(rt);
  if (failure) throw new CoderError('SelfTestFailed', `coder kernel ${kernel} failed its self-test: ${failure}`);
  return rt;
}

/** The best kernel that loads and passes its self-test. A failing kernel is skipped, loudly. */
export function pickRuntime(modules: CoderModules): CoderRuntime {
  const failures: string[] = [];
  for (const kernel of KERNELS) {
    try {
      const rt = loadRuntime(modules, kernel);
      if (rt) return rt;
    } catch (e) {
      failures.push((e as Error).message);
      console.error(`shardgate: ${(e as Error).message}; trying the next kernel`);
    }
  }
  throw new CoderError('NoKernel', `no coder kernel could run here${failures.length ? ': ' + failures.join('; ') : ''}`);
}
