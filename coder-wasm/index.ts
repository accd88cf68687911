/**
 * shardgate's erasure coder, TypeScript face. Systematic Reed-Solomon over GF(2^8) with ISA-L's
 * Cauchy generator (shards interoperate with ISA-L and klauspost/reedsolomon), running in wasm
 * with the fastest kernel the engine accepts (relaxed SIMD > simd128 > scalar), plus the S3
 * checksums (CRC32, CRC32C, CRC64NVME with combine) and XXH64, the shard-block hash.
 *
 * Ownership: a `Stripe` is k+m shards in wasm memory; callers write data shards straight into
 * `stripe.shard(i)` (no copy in or out: a copy costs ~40% of encode speed). Views returned by
 * `shard()` are invalidated whenever wasm memory grows (any allocation may grow it): take a new
 * view after allocating, never keep one across an `await` that may allocate. Stripes and coders
 * hold wasm memory until `free()`; freed memory is reused, so an isolate that frees what it
 * allocates does not grow per request.
 *
 * Not checked: the bytes of shards marked present are trusted; corruption must be caught by
 * shard checksums before reconstruct. Errors are `CoderError`.
 */
import { coderModules } from '#coder-modules';
import { CoderError, type CoderRuntime, type KernelName, loadRuntime, pickRuntime } from './runtime.ts';
import { createChecksums, type Checksums } from './checksums.ts';

export { CoderError, KERNELS, type KernelName } from './runtime.ts';

let defaultRuntime: CoderRuntime | undefined;
const pinnedRuntimes = new Map<KernelName, CoderRuntime | null>();

function runtimeFor(kernel?: KernelName): CoderRuntime {
  if (!kernel) return (defaultRuntime ??= pickRuntime(coderModules));
  if (!pinnedRuntimes.has(kernel)) pinnedRuntimes.set(kernel, loadRuntime(coderModules, kernel));
  const rt = pinnedRuntimes.get(kernel);
  if (!rt) throw new CoderError('NoKernel', `kernel ${kernel} cannot run in this engine`);
  return rt;
}

/** The kernel `createCoder` uses by default here (loads the module on first call). */
export function activeKernel(): KernelName {
  return runtimeFor().kernel;
}

/** Kernels this engine can run (for tests and benchmarks). */
export function availableKernels(): KernelName[] {
  return (['relaxed-simd', 'simd128', 'scalar'] as const).filter((k) => {
    try {
      return runtimeFor(k) !== null;
    } catch {
      return false;
    }
  });
}

export interface ReconstructOptions {
  /** Rebuild only missing data shards (what a read needs); parity stays as it is. */
  dataOnly?: boolean;
  /** Bytes of each shard to process, default the stripe's shardLen. */
  len?: number;
}

/** k+m shards of `shardLen` bytes, contiguous in wasm memory. */
export interface Stripe {
  readonly shardLen: number;
  /** View of shard i (0..k-1 data, k..k+m-1 parity). See the module note on view lifetime. */
  shard(i: number): Uint8Array;
  /** Writes the parity shards from the data shards (first `len` bytes of each). */
  encode(len?: number): void;
  /**
   * Rebuilds, in place, every shard i with `present[i] === false` (data only with `dataOnly`).
   * Throws CoderError('TooFewShards') when fewer than k shards are present.
   */
  reconstruct(present: readonly boolean[], opts?: ReconstructOptions): void;
  /** True when parity matches data. */
  verify(len?: number): boolean;
  /** XXH64 of bytes [offset, offset+len) of shard i, hashed in place. */
  xxh64(i: number, offset: number, len: number, seed?: bigint): bigint;
  free(): void;
}

/**
 * The m parity shards of a column of data that arrives one data shard at a time (a writer that
 * receives data shard 0 whole, then shard 1, ...): parity starts at zero and each data block is
 * folded in with `addBlock`; once every data shard's bytes have been added, `parity(r)` equals
 * what `encode` would give. Memory: m * shardLen + one block, never the k data shards.
 */
export interface ParityBuilder {
  readonly shardLen: number;
  /** Scratch view of `blockLen` bytes in wasm memory: copy a data block here before addBlock. */
  block(): Uint8Array;
  /** parity[r][offset, offset+len) ^= c(r, dataShard) * block[0, len), for every parity shard r. */
  addBlock(dataShard: number, offset: number, len: number): void;
  /** XXH64 of the first `len` bytes of the scratch block, hashed in place. */
  blockXxh64(len: number, seed?: bigint): bigint;
  /** View of parity shard r (0..m-1). See the module note on view lifetime. */
  parity(r: number): Uint8Array;
  /** XXH64 of bytes [offset, offset+len) of parity shard r, hashed in place. */
  parityXxh64(r: number, offset: number, len: number, seed?: bigint): bigint;
  /** Zeroes the parity for the next column. */
  reset(): void;
  free(): void;
}

/**
 * Lost shards of a column rebuilt from k sources whose blocks arrive one at a time, in any order
 * and interleaved across sources (each source streams on its own): every target starts at zero
 * and each source block is folded in with `addBlock` (target ^= c(target, source) * block, with
 * the decode coefficients of exactly these k sources); once every source's bytes [0, len) have
 * been added, `target(t)[0, len)` equals the lost shard. Memory: targets x shardLen plus one
 * scratch block, never the sources. The coefficients belong to the source set: a rebuild whose
 * source fails part way must start again (`reset`) with another set, in a new rebuilder.
 */
export interface ColumnRebuilder {
  readonly sources: readonly number[];
  readonly targets: readonly number[];
  readonly shardLen: number;
  /** Scratch view of `blockLen` bytes in wasm memory: copy a verified source block here before addBlock. */
  block(): Uint8Array;
  /** Folds the scratch block, bytes [offset, offset+len) of source shard `source`, into every target. */
  addBlock(source: number, offset: number, len: number): void;
  /** View of rebuilt shard `shard` (one of `targets`). See the module note on view lifetime. */
  target(shard: number): Uint8Array;
  /** Zeroes the targets. */
  reset(): void;
  free(): void;
}

/**
 * Parity syndromes of a column whose lost data shards are rebuilt from whatever streams, in any
 * order, without committing to a source set up front (a degraded read that finds a second shard
 * down mid-pass keeps what it has folded). For each parity shard p of `parities`:
 *   syndrome(p) = parity(p) ^ sum over the data shards i folded in of c(p, i) * data(i),
 * which, once every data shard that is not unknown has been folded in (`addData`) and p itself
 * (`addParity`), equals sum over the unknown data shards u of c(p, u) * data(u), whichever they
 * are. `solve` then gives an unknown data shard's bytes from as many syndromes as there are
 * unknowns (rows may differ in which data shards are unknown and which syndromes are complete:
 * the caller says, per call). Memory: |parities| x shardLen plus two blocks; no source is held.
 */
export interface SyndromeRebuilder {
  readonly parities: readonly number[];
  readonly shardLen: number;
  /** Scratch view of `blockLen` bytes in wasm memory: copy a verified block here before adding it. */
  block(): Uint8Array;
  /** Folds the scratch block, bytes [offset, offset+len) of data shard `dataShard`, into every syndrome. */
  addData(dataShard: number, offset: number, len: number): void;
  /** Folds the scratch block, bytes [offset, offset+len) of parity shard `parity` (one of `parities`), into its syndrome. */
  addParity(parity: number, offset: number, len: number): void;
  /**
   * Bytes [offset, offset+len) of data shard `shard`, one of `unknowns` (the data shards not
   * folded in at these bytes), from the syndromes of `using` (parities complete at these bytes,
   * exactly as many as `unknowns`). A view of scratch memory, valid until the next solve.
   */
  solve(unknowns: readonly number[], using: readonly number[], shard: number, offset: number, len: number): Uint8Array;
  free(): void;
}

export interface Coder {
  readonly dataShards: number;
  readonly parityShards: number;
  readonly kernel: KernelName;
  /** Allocates a stripe in wasm memory; reuse it across stripes of one object, then free it. */
  stripe(shardLen: number): Stripe;
  /** Allocates parity for data that arrives shard by shard (`blockLen` <= shardLen). */
  parityBuilder(shardLen: number, blockLen: number): ParityBuilder;
  /**
   * Allocates a rebuilder of `targets` (shard indices, not among `sources`) from exactly k
   * distinct `sources`; CoderError('TooFewShards') when they are not k or cannot decode.
   */
  columnRebuilder(sources: readonly number[], targets: readonly number[], shardLen: number, blockLen: number): ColumnRebuilder;
  /** Allocates syndromes of `parities` (distinct parity shard indices) for a column of `shardLen` bytes. */
  syndromeRebuilder(parities: readonly number[], shardLen: number, blockLen: number): SyndromeRebuilder;
  /** Copying convenience: shards are k+m equal-length arrays; parity ones are overwritten. */
  encode(shards: Uint8Array[]): void;
  /** Copying convenience: null marks a missing shard; returns all k+m shards (new arrays for rebuilt ones). */
  reconstruct(shards: (Uint8Array | null)[], opts?: Omit<ReconstructOptions, 'len'>): Uint8Array[];
  /** Copying convenience: true when parity matches data. */
  verify(shards: Uint8Array[]): boolean;
  free(): void;
}

export interface CoderOptions {
  /** Force a kernel (tests, benchmarks); default is the best one that passes its self-test. */
  kernel?: KernelName;
}

/** A coder for k data + m parity shards: 1 <= k, 0 <= m, k + m <= 256. */
export function createCoder(dataShards: number, parityShards: number, opts: CoderOptions = {}): Coder {
  const k = dataShards,
    m = parityShards;
  if (!Number.isInteger(k) || !Number.isInteger(m) || k < 1 || m < 0 || k + m > 256) {
    throw new CoderError('InvalidShape', `need 1 <= k, 0 <= m, k + m <= 256; got k=${k}, m=${m}`);
  }
  const rt = runtimeFor(opts.kernel);
  const x = rt.exports;
  let handle = x.sg_coder_new(k, m);
  const n = k + m;
  const presentPtr = rt.alloc(n);
  const live = () => {
    if (handle === 0) throw new CoderError('InvalidArgument', 'coder used after free()');
    return handle;
  };

  function stripe(shardLen: number): Stripe {
    if (!Number.isInteger(shardLen) || shardLen < 0) throw new CoderError('InvalidArgument', `bad shardLen ${shardLen}`);
    const size = Math.max(1, n * shardLen);
    let base = rt.alloc(size);
    const checkLen = (len: number) => {
      if (base === 0) throw new CoderError('InvalidArgument', 'stripe used after free()');
      if (!Number.isInteger(len) || len < 0 || len > shardLen) throw new CoderError('InvalidArgument', `len ${len} outside 0..${shardLen}`);
      return len;
    };
    return {
      shardLen,
      shard(i) {
        if (!(i >= 0 && i < n)) throw new CoderError('InvalidArgument', `shard ${i} outside 0..${n - 1}`);
        checkLen(0);
        return rt.bytes(base + i * shardLen, shardLen);
      },
      encode(len = shardLen) {
        x.sg_encode(live(), base, shardLen, checkLen(len));
      },
      reconstruct(present, o = {}) {
        const len = checkLen(o.len ?? shardLen);
        if (present.length !== n) throw new CoderError('InvalidArgument', `present needs ${n} entries`);
        rt.bytes(presentPtr, n).set(present.map((p) => (p ? 1 : 0)));
        if (x.sg_reconstruct(live(), base, shardLen, len, presentPtr, o.dataOnly ? 1 : 0) !== 0) {
          throw new CoderError('TooFewShards', `need ${k} of ${n} shards, have ${present.filter(Boolean).length}`);
        }
      },
      verify(len = shardLen) {
        return x.sg_verify(live(), base, shardLen, checkLen(len)) === 1;
      },
      xxh64(i, offset, len, seed = 0n) {
        checkLen(0);
        if (!(i >= 0 && i < n) || offset < 0 || len < 0 || offset + len > shardLen) throw new CoderError('InvalidArgument', 'xxh64 range outside the shard');
        return BigInt.asUintN(64, x.sg_xxh64(base + i * shardLen + offset, len, seed));
      },
      free() {
        if (base !== 0) rt.free(base, size);
        base = 0;
      },
    };
  }

  function parityBuilder(shardLen: number, blockLen: number): ParityBuilder {
    if (!Number.isInteger(shardLen) || shardLen < 0 || !Number.isInteger(blockLen) || blockLen < 0 || blockLen > shardLen) {
      throw new CoderError('InvalidArgument', `bad parity builder shape ${shardLen}/${blockLen}`);
    }
    const paritySize = Math.max(1, m * shardLen);
    let parity = rt.alloc(paritySize);
    let block = rt.alloc(Math.max(1, blockLen));
    const alive = () => {
      if (parity === 0) throw new CoderError('InvalidArgument', 'parity builder used after free()');
    };
    const range = (offset: number, len: number) => {
      if (!(offset >= 0 && len >= 0 && offset + len <= shardLen)) throw new CoderError('InvalidArgument', `range ${offset}+${len} outside 0..${shardLen}`);
    };
    rt.bytes(parity, paritySize).fill(0);
    return {
      shardLen,
      block() {
        alive();
        return rt.bytes(block, blockLen);
      },
      addBlock(dataShard, offset, len) {
        alive();
        range(offset, len);
        if (!(dataShard >= 0 && dataShard < k) || len > blockLen) throw new CoderError('InvalidArgument', `data shard ${dataShard} / len ${len}`);
        if (m > 0 && len > 0) x.sg_encode_update(live(), dataShard, block, parity + offset, shardLen, len);
      },
      blockXxh64(len, seed = 0n) {
        alive();
        if (!(len >= 0 && len <= blockLen)) throw new CoderError('InvalidArgument', `len ${len} outside 0..${blockLen}`);
        return BigInt.asUintN(64, x.sg_xxh64(block, len, seed));
      },
      parity(r) {
        alive();
        if (!(r >= 0 && r < m)) throw new CoderError('InvalidArgument', `parity ${r} outside 0..${m - 1}`);
        return rt.bytes(parity + r * shardLen, shardLen);
      },
      parityXxh64(r, offset, len, seed = 0n) {
        alive();
        range(offset, len);
        if (!(r >= 0 && r < m)) throw new CoderError('InvalidArgument', `parity ${r} outside 0..${m - 1}`);
        return BigInt.asUintN(64, x.sg_xxh64(parity + r * shardLen + offset, len, seed));
      },
      reset() {
        alive();
        rt.bytes(parity, paritySize).fill(0);
      },
      free() {
        if (parity !== 0) {
          rt.free(parity, paritySize);
          rt.free(block, Math.max(1, blockLen));
        }
        parity = block = 0;
      },
    };
  }

  /** c(t, s) for every target t and source s: the decode plan of `sources`, read off a one-byte stripe. */
  function decodeCoefficients(sources: readonly number[], targets: readonly number[]): Uint8Array[] {
    const present = [...Array(n).keys()].map((i) => sources.includes(i));
    const one = stripe(1);
    try {
      return sources.map((src) => {
        for (let i = 0; i < n; i++) one.shard(i)[0] = i === src ? 1 : 0;
        one.reconstruct(present, { dataOnly: targets.every((t) => t < k) });
        return Uint8Array.from(targets, (t) => one.shard(t)[0]!);
      });
    } finally {
      one.free();
    }
  }

  function columnRebuilder(sources: readonly number[], targets: readonly number[], shardLen: number, blockLen: number): ColumnRebuilder {
    const distinct = new Set(sources);
    if (distinct.size !== k || sources.length !== k || sources.some((i) => !(i >= 0 && i < n))) {
      throw new CoderError('TooFewShards', `a rebuild needs ${k} distinct sources, got [${sources.join(',')}]`);
    }
    if (targets.some((t) => !(t >= 0 && t < n) || distinct.has(t)) || new Set(targets).size !== targets.length) {
      throw new CoderError('InvalidArgument', `targets [${targets.join(',')}] must be distinct shards outside the sources`);
    }
    if (!Number.isInteger(shardLen) || shardLen < 0 || !Number.isInteger(blockLen) || blockLen < 0 || blockLen > shardLen) {
      throw new CoderError('InvalidArgument', `bad rebuilder shape ${shardLen}/${blockLen}`);
    }
    const coefficients = decodeCoefficients(sources, targets);
    const count = targets.length;
    const outSize = Math.max(1, count * shardLen);
    let out = rt.alloc(outSize);
    let block = rt.alloc(Math.max(1, blockLen));
    let coeffs = rt.alloc(Math.max(1, count));
    const alive = () => {
      if (out === 0) throw new CoderError('InvalidArgument', 'column rebuilder used after free()');
    };
    rt.bytes(out, outSize).fill(0);
    return {
      sources: [...sources],
      targets: [...targets],
      shardLen,
      block() {
        alive();
        return rt.bytes(block, blockLen);
      },
      addBlock(source, offset, len) {
        alive();
        const at = sources.indexOf(source);
        if (at < 0) throw new CoderError('InvalidArgument', `shard ${source} is not a source`);
        if (!(offset >= 0 && len >= 0 && len <= blockLen && offset + len <= shardLen))
          throw new CoderError('InvalidArgument', `range ${offset}+${len} outside 0..${shardLen}`);
        if (count === 0 || len === 0) return;
        rt.bytes(coeffs, count).set(coefficients[at]!);
        x.sg_mul_add(coeffs, count, block, out + offset, shardLen, len);
      },
      target(shard) {
        alive();
        const t = targets.indexOf(shard);
        if (t < 0) throw new CoderError('InvalidArgument', `shard ${shard} is not a target`);
        return rt.bytes(out + t * shardLen, shardLen);
      },
      reset() {
        alive();
        rt.bytes(out, outSize).fill(0);
      },
      free() {
        if (out !== 0) {
          rt.free(out, outSize);
          rt.free(block, Math.max(1, blockLen));
          rt.free(coeffs, Math.max(1, count));
        }
        out = block = coeffs = 0;
      },
    };
  }

  function syndromeRebuilder(parities: readonly number[], shardLen: number, blockLen: number): SyndromeRebuilder {
    if (parities.some((p) => !(p >= k && p < n)) || new Set(parities).size !== parities.length) {
      throw new CoderError('InvalidArgument', `syndromes need distinct parity shards, got [${parities.join(',')}]`);
    }
    if (!Number.isInteger(shardLen) || shardLen < 0 || !Number.isInteger(blockLen) || blockLen < 0 || blockLen > shardLen) {
      throw new CoderError('InvalidArgument', `bad syndrome shape ${shardLen}/${blockLen}`);
    }
    const count = parities.length;
    // c(p, i) for every data shard i (row i), over `parities`: the generator's columns.
    const generator = count ? decodeCoefficients([...Array(k).keys()], parities) : [];
    const solved = new Map<string, Uint8Array>();
    const outSize = Math.max(1, count * shardLen);
    let out = rt.alloc(outSize);
    let block = rt.alloc(Math.max(1, blockLen));
    let result = rt.alloc(Math.max(1, blockLen));
    let coeffs = rt.alloc(Math.max(1, count));
    const alive = () => {
      if (out === 0) throw new CoderError('InvalidArgument', 'syndrome rebuilder used after free()');
    };
    const range = (offset: number, len: number) => {
      if (!(offset >= 0 && len >= 0 && len <= blockLen && offset + len <= shardLen))
        throw new CoderError('InvalidArgument', `range ${offset}+${len} outside 0..${shardLen}`);
    };
    rt.bytes(out, outSize).fill(0);
    /** c(u, p) for p in `using`, decoding `shard` from the data not unknown plus `using`. */
    const plan = (unknowns: readonly number[], using: readonly number[], shard: number): Uint8Array => {
      const key = `${unknowns.join(',')}|${using.join(',')}|${shard}`;
      let c = solved.get(key);
      if (!c) {
        if (unknowns.length !== using.length || !unknowns.includes(shard) || using.some((p) => !parities.includes(p))) {
          throw new CoderError('InvalidArgument', `cannot solve shard ${shard} of unknowns [${unknowns.join(',')}] from syndromes [${using.join(',')}]`);
        }
        const sources = [...[...Array(k).keys()].filter((i) => !unknowns.includes(i)), ...using];
        const bySource = decodeCoefficients(sources, [shard]);
        c = Uint8Array.from(using, (p) => bySource[sources.indexOf(p)]![0]!);
        solved.set(key, c);
      }
      return c;
    };
    return {
      parities: [...parities],
      shardLen,
      block() {
        alive();
        return rt.bytes(block, blockLen);
      },
      addData(dataShard, offset, len) {
        alive();
        range(offset, len);
        if (!(dataShard >= 0 && dataShard < k)) throw new CoderError('InvalidArgument', `data shard ${dataShard} outside 0..${k - 1}`);
        if (count === 0 || len === 0) return;
        rt.bytes(coeffs, count).set(generator[dataShard]!);
        x.sg_mul_add(coeffs, count, block, out + offset, shardLen, len);
      },
      addParity(parity, offset, len) {
        alive();
        range(offset, len);
        const at = parities.indexOf(parity);
        if (at < 0) throw new CoderError('InvalidArgument', `shard ${parity} is not one of the syndromes`);
        if (len === 0) return;
        rt.bytes(coeffs, 1)[0] = 1;
        x.sg_mul_add(coeffs, 1, block, out + at * shardLen + offset, shardLen, len);
      },
      solve(unknowns, using, shard, offset, len) {
        alive();
        range(offset, len);
        const c = plan(unknowns, using, shard);
        rt.bytes(result, Math.max(1, blockLen)).fill(0, 0, len);
        using.forEach((p, j) => {
          rt.bytes(coeffs, 1)[0] = c[j]!;
          x.sg_mul_add(coeffs, 1, out + parities.indexOf(p) * shardLen + offset, result, blockLen, len);
        });
        return rt.bytes(result, len);
      },
      free() {
        if (out !== 0) {
          rt.free(out, outSize);
          rt.free(block, Math.max(1, blockLen));
          rt.free(result, Math.max(1, blockLen));
          rt.free(coeffs, Math.max(1, count));
        }
        out = block = result = coeffs = 0;
      },
    };
  }

  function withStripe<T>(shards: (Uint8Array | null)[], fn: (s: Stripe) => T): T {
    if (shards.length !== n) throw new CoderError('InvalidArgument', `need ${n} shards, got ${shards.length}`);
    const len = shards.find((s) => s)?.length ?? 0;
    if (shards.some((s) => s && s.length !== len)) throw new CoderError('InvalidArgument', 'shards differ in length');
    const s = stripe(len);
    try {
      shards.forEach((sh, i) => sh && s.shard(i).set(sh));
      return fn(s);
    } finally {
      s.free();
    }
  }

  return {
    dataShards: k,
    parityShards: m,
    kernel: rt.kernel,
    stripe,
    parityBuilder,
    columnRebuilder,
    syndromeRebuilder,
    encode(shards) {
      withStripe(shards, (s) => {
        s.encode();
        for (let i = k; i < n; i++) shards[i]!.set(s.shard(i));
      });
    },
    reconstruct(shards, o = {}) {
      return withStripe(shards, (s) => {
        s.reconstruct(
          shards.map((sh) => sh !== null),
          o,
        );
        return shards.map((sh, i) => sh ?? (o.dataOnly && i >= k ? null : s.shard(i).slice())) as Uint8Array[];
      });
    },
    verify(shards) {
      return withStripe(shards, (s) => s.verify());
    },
    free() {
      if (handle !== 0) {
        x.sg_coder_free(handle);
        rt.free(presentPtr, n);
      }
      handle = 0;
    },
  };
}

let defaultChecksums: Checksums | undefined;
const pinnedChecksums = new Map<KernelName, Checksums>();

/** The checksum functions, computed in the coder module (or natively where that is faster). */
export function checksums(kernel?: KernelName): Checksums {
  if (!kernel) return (defaultChecksums ??= createChecksums(runtimeFor()));
  let c = pinnedChecksums.get(kernel);
  if (!c) pinnedChecksums.set(kernel, (c = createChecksums(runtimeFor(kernel), { native: false })));
  return c;
}
