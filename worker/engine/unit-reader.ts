/**
 * readUnit: the streaming GET path for bytes [start, end] of one coded unit. Healthy reads fetch
 * only the data-shard blocks the range touches, verify each block and copy the bytes out, with no
 * decoding. When a data shard is missing, unreachable or corrupt, the reader switches, from that
 * stripe on, to k good shards (data first, then parity) and reconstructs each stripe in place.
 * Fewer than k good shards: QuorumError (a 503 to the client), never wrong bytes. Every shard
 * found unhealthy is reported through `onUnhealthy`, so the caller can queue its repair.
 * The first stripe is read before the stream is returned: failures up front become errors,
 * not truncated bodies. Data shards slower than `hedgeMs` are decoded around (hedged reads).
 * Known gap: no read-ahead; stripe s+1 is requested when the client has taken stripe s.
 */
import type { Backend } from '../../backends/types.ts';
import { createCoder } from '../../coder-wasm/index.ts';
import { unitSalt } from './format.ts';
import { shardLayout } from './layout.ts';
import { MAX_OPEN_SUBREQUESTS, Semaphore, drainingBackend } from './subrequests.ts';
import { shardKey, type CodedUnit } from '../catalog/manifest.ts';
import { latencyOf } from './backend-latency.ts';
import { ShardReadError, ShardReader } from './shard-reader.ts';
import { QuorumError } from './unit-writer.ts';

export interface ReadUnitInput {
  bucket: string;
  unit: CodedUnit;
  backends: Map<string, Backend>;
  /** Inclusive byte offsets within the unit; start <= end < size. */
  start: number;
  end: number;
  onUnhealthy?: (err: ShardReadError) => void;
  /** A healthy read waits this long for the data shards of a stripe, then decodes from others. */
  hedgeMs?: number;
}

export async function readUnit(input: ReadUnitInput): Promise<ReadableStream<Uint8Array>> {
  const { unit, start, end } = input;
  const replica = unit.codec === 'replica';
  const n = unit.k + unit.m;
  const layouts = unit.headerLens.map((_, i) => shardLayout(unit, i));
  const layout = layouts[0]!;
  const { first, last } = layout.stripeRange(start, end);
  // Reading more than 6 shards at once would exceed Workers' open-subrequest limit: drain each
  // shard range into memory, 6 at a time (units of wide policies are kept small for this).
  const backends = unit.k > MAX_OPEN_SUBREQUESTS ? drainAll(input.backends) : input.backends;
  const coder = createCoder(unit.k, replica ? 0 : unit.m);
  const stripe = coder.stripe(unit.blockSize);
  const salt = unitSalt(unit.unitId);
  const bad = new Set<number>(unit.missing);
  /** Shard index -> its verified block of the current stripe, as views of the backend's chunks. */
  let blockViews = new Map<number, Uint8Array[]>();
  // Decoding sources in order of preference: data shards (no decoding needed for them), then
  // the other shards by how fast their backends have been answering. Replicas: fastest first.
  const byLatency = (a: number, b: number) => latencyOf(unit.placement[a]!) - latencyOf(unit.placement[b]!);
  const preference = replica
    ? [...Array(n).keys()].sort(byLatency)
    : [...[...Array(unit.k).keys()], ...[...Array(unit.m).keys()].map((j) => unit.k + j).sort(byLatency)];
  const slow = new Set<number>();
  let decoding = replica ? true : [...Array(unit.k).keys()].some((i) => bad.has(i));
  let readers = new Map<number, ShardReader>();

  const backendOf = (i: number): Backend => {
    const b = backends.get(unit.placement[i]!);
    if (!b) throw new ShardReadError(i, 'unavailable', `backend ${unit.placement[i]} is not configured`);
    return b;
  };
  const readerFor = (i: number, from: number, to: number): ShardReader => {
    let r = readers.get(i);
    if (!r) readers.set(i, (r = new ShardReader(i, backendOf(i), shardKey(input.bucket, unit.unitId, i), layouts[i]!, from, to, salt)));
    return r;
  };
  const markBad = (err: ShardReadError) => {
    bad.add(err.shardIndex);
    readers.get(err.shardIndex)?.cancel();
    readers.delete(err.shardIndex);
    input.onUnhealthy?.(err);
  };
  const dropReaders = () => {
    for (const r of readers.values()) r.cancel();
    readers = new Map();
  };

  /** Data shards whose bytes in stripe s overlap [start, end]. */
  const neededData = (s: number): number[] =>
    [...Array(unit.k).keys()].filter((i) => {
      const span = layout.dataSpan(s, i);
      return span.length > 0 && span.offset <= end && span.offset + span.length > start;
    });

  async function loadStripe(s: number): Promise<void> {
    const need = replica ? 1 : unit.k;
    const loaded = new Set<number>(); // blocks of stripe s already in stripe memory
    blockViews = new Map();
    let generation = 0; // results of reads abandoned by a hedge are ignored
    const readInto = async (shards: number[], to: (i: number) => number) => {
      const gen = generation;
      const results = await Promise.allSettled(
        shards.map((i) => readerFor(i, s, to(i)).readBlock(s, stripe, replica ? 0 : i).then((views) => {
          if (gen !== generation) return;
          loaded.add(i);
          blockViews.set(i, views);
        })),
      );
      if (gen !== generation) return false;
      results.forEach((r) => {
        if (r.status === 'fulfilled') return;
        if (r.reason instanceof ShardReadError) markBad(r.reason);
        else throw r.reason;
      });
      return results.every((r) => r.status === 'fulfilled');
    };
    if (!decoding) {
      const needed = neededData(s);
      const reads = readInto(needed, lastNeeded);
      let timer: ReturnType<typeof setTimeout> | undefined;
      const outcome = input.hedgeMs
        ? await Promise.race([reads, new Promise<'slow'>((resolve) => (timer = setTimeout(() => resolve('slow'), input.hedgeMs)))])
        : await reads;
      clearTimeout(timer); // one timer per stripe must not outlive it
      if (outcome === true) return;
      if (outcome === 'slow') {
        // Hedge: shards that have not delivered in time are left out (not reported: their data
        // is fine) and the stripe is decoded from the others. cancel() guarantees a late block
        // never lands in stripe memory.
        for (const i of needed) if (!loaded.has(i)) slow.add(i);
        generation++;
        reads.catch(() => {});
      }
      // From this stripe on, read k good shards and decode. Data shards that delivered this
      // stripe keep their open reads when those reach the last stripe (a degraded read adds
      // parity readers rather than reopening healthy ones); their blocks stay loaded.
      decoding = true;
      for (const [i, r] of readers) {
        if (loaded.has(i) && r.lastStripe >= last) continue;
        r.cancel();
        readers.delete(i);
      }
    }
    for (;;) {
      let sources = preference.filter((i) => !bad.has(i) && !slow.has(i)).slice(0, need);
      // Slow shards are a last resort, better than failing the read.
      if (sources.length < need) sources = preference.filter((i) => !bad.has(i)).slice(0, need);
      if (sources.length < need) {
        throw new QuorumError(`only ${n - bad.size} of ${n} shards of unit ${unit.unitId} are readable; ${need} needed`, []);
      }
      if (await readInto(sources.filter((i) => !loaded.has(i)), () => last)) {
        if (!replica) {
          const present = [...Array(n).keys()].map((i) => sources.includes(i));
          stripe.reconstruct(present, { dataOnly: true, len: layout.blockLen(s) });
        }
        return;
      }
    }
  }

  /** The last stripe in [first, last] where data shard i holds requested bytes. */
  function lastNeeded(i: number): number {
    for (let s = last; s > first; s--) if (neededData(s).includes(i)) return s;
    return first;
  }

  /**
   * Stripe s's requested bytes, in order. A data block read as it is stored goes out as views of
   * the backend's chunks, verified and never modified (no copy); a rebuilt one, or one that came
   * in many small chunks (each costs downstream), is copied out of stripe memory.
   */
  function chunksOut(s: number): Uint8Array[] {
    const from = Math.max(start, s * layout.stripeData);
    const to = Math.min(end + 1, s * layout.stripeData + Math.min(layout.stripeData, unit.size - s * layout.stripeData));
    const out: Uint8Array[] = [];
    for (let i = 0; i < unit.k; i++) {
      const span = layout.dataSpan(s, i);
      const lo = Math.max(from, span.offset) - span.offset, hi = Math.min(to, span.offset + span.length) - span.offset;
      if (hi <= lo) continue;
      const views = replica ? blockViews.values().next().value : blockViews.get(i);
      if (views && views.length <= MAX_VIEWS_PER_BLOCK) out.push(...sliceViews(views, lo, hi));
      else out.push(stripe.shard(replica ? 0 : i).slice(lo, hi));
    }
    return out;
  }

  const release = () => {
    dropReaders();
    stripe.free();
    coder.free();
  };

  let s = first;
  try {
    await loadStripe(s);
  } catch (err) {
    release();
    throw err;
  }
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        if (s > last) {
          release();
          controller.close();
          return;
        }
        if (s > first) await loadStripe(s);
        for (const chunk of chunksOut(s)) controller.enqueue(chunk);
        s++;
      } catch (err) {
        release();
        controller.error(err);
      }
    },
    cancel() {
      release();
    },
  }, { highWaterMark: 0 });
}

/** More views than this for one block and it is copied instead: small chunks cost per chunk downstream. */
const MAX_VIEWS_PER_BLOCK = 4;

/** Bytes [lo, hi) of the concatenation of `views`, as views. */
function sliceViews(views: Uint8Array[], lo: number, hi: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  let at = 0;
  for (const v of views) {
    const a = Math.max(lo, at), b = Math.min(hi, at + v.length);
    if (b > a) out.push(v.subarray(a - at, b - at));
    at += v.length;
  }
  return out;
}

function drainAll(backends: Map<string, Backend>): Map<string, Backend> {
  const sem = new Semaphore(MAX_OPEN_SUBREQUESTS);
  return new Map([...backends].map(([id, b]) => [id, drainingBackend(b, sem)]));
}
