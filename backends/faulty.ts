// A fault-injecting Backend wrapper for tests and local dev (after MinIO's naughtyDisk): take a
// backend offline, fail chosen calls (the Nth put, a predicate on op/key) or a seeded fraction of
// calls, add latency, cut read bodies short, flip bits in read bodies, or serve an older version
// of a key it saw written (a lagging replica). Faults can be switched at any time, mid-run.
// Everything random comes from a seeded PRNG, so a test sees the same faults on every run.
// A hung backend (`hangWhen`): matching calls never answer; only a put's or a get's signal ends
// them (as a socket that accepted the request and went silent).
// Known gaps: stale reads need `recordWrites`, which keeps a copy of every blob written through
// the wrapper; a hung head, delete or list never settles (they take no signal).

import {
  BackendError,
  type Backend,
  type BackendErrorKind,
  type BlobInfo,
  type ByteRange,
  type GetOptions,
  type GetResult,
  type ListOptions,
  type ListPage,
  type PutBody,
  type PutOptions,
} from './types.ts';
import { bytesToStream, putBodyStream, readAll } from './streams.ts';
import { corruptBody, truncateBody, type TruncateMode } from './faulty-body.ts';

export type BackendOp = 'put' | 'get' | 'head' | 'delete' | 'list';

/** One call seen by the wrapper; `key` is the prefix for list. Numbers count from 1. */
export interface FaultCall {
  op: BackendOp;
  key: string;
  callNo: number;
  opCallNo: number;
}
export type CallFilter = (call: FaultCall) => boolean;

export interface FaultyBackendOptions {
  /** PRNG seed for failAtRate and random bit flips (default 1). */
  seed?: number;
  /** Keep a copy of each blob written through the wrapper, oldest first (needed by serveStale). */
  recordWrites?: boolean;
}

interface FailRule {
  when: CallFilter;
  kind: BackendErrorKind;
  after: boolean;
}
interface BodyRule {
  when: CallFilter;
  wrap: (body: ReadableStream<Uint8Array>, bodyBytes: number) => ReadableStream<Uint8Array>;
}

const always: CallFilter = () => true;

/** mulberry32: tiny, fast, and good enough to pick faults. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class FaultyBackend implements Backend {
  readonly id: string;
  readonly domain: string;
  /** While true every call rejects with 'Unavailable' (after any latency). */
  offline = false;
  /** Every call made, in order, for assertions. */
  readonly calls: FaultCall[] = [];
  private readonly random: () => number;
  private readonly opCounts: Record<BackendOp, number> = { put: 0, get: 0, head: 0, delete: 0, list: 0 };
  private readonly history = new Map<string, Uint8Array[]>();
  private fails: FailRule[] = [];
  private rate?: { rate: number; kind: BackendErrorKind; ops: BackendOp[] };
  private delays: { ms: number; when: CallFilter }[] = [];
  private hangs: CallFilter[] = [];
  /** Hung calls whose signal ended them, for assertions (the caller's deadline fired). */
  readonly abortedHangs: FaultCall[] = [];
  private bodyRules: BodyRule[] = [];
  private stale?: CallFilter;

  constructor(
    readonly inner: Backend,
    private readonly opts: FaultyBackendOptions = {},
  ) {
    this.id = inner.id;
    this.domain = inner.domain;
    this.random = seededRandom(opts.seed ?? 1);
  }

  /** Filter for the `n`th call of `op` (1-based), e.g. `FaultyBackend.nth('put', 3)`. */
  static nth(op: BackendOp, n: number): CallFilter {
    return (c) => c.op === op && c.opCallNo === n;
  }

  goOffline(): this {
    this.offline = true;
    return this;
  }

  goOnline(): this {
    this.offline = false;
    return this;
  }

  /** Matching calls reject with `kind`; `after: true` fails only once the inner call succeeded
   *  (the write happened but the caller is told otherwise, as after a lost response). */
  failWhen(when: CallFilter, kind: BackendErrorKind = 'Unavailable', opts: { after?: boolean } = {}): this {
    this.fails.push({ when, kind, after: opts.after ?? false });
    return this;
  }

  /** Each call of `ops` fails with probability `rate`, drawn from the seeded PRNG. */
  failAtRate(rate: number, opts: { kind?: BackendErrorKind; ops?: BackendOp[] } = {}): this {
    this.rate = { rate, kind: opts.kind ?? 'Unavailable', ops: opts.ops ?? ['put', 'get', 'head', 'delete', 'list'] };
    return this;
  }

  /** Matching calls wait `ms` before doing anything else. */
  delayWhen(ms: number, when: CallFilter = always): this {
    this.delays.push({ ms, when });
    return this;
  }

  /** Matching calls never answer (a hung backend); a put or get rejects with its signal's reason when it aborts. */
  hangWhen(when: CallFilter = always): this {
    this.hangs.push(when);
    return this;
  }

  /** Read bodies stop after `keepBytes`: silently ('end', a short read) or with 'Unavailable'. */
  truncateGets(keepBytes: number, opts: { when?: CallFilter; mode?: TruncateMode } = {}): this {
    const mode = opts.mode ?? 'end';
    const error = () => new BackendError(this.id, 'Unavailable', `injected: connection lost after ${keepBytes} bytes`);
    this.bodyRules.push({ when: opts.when ?? always, wrap: (body) => truncateBody(body, keepBytes, mode, error) });
    return this;
  }

  /** Flips one bit at each of `at` (byte offsets in the returned body), or at `count` seeded
   *  random offsets; the stored blob is untouched. */
  flipBitsOnGet(opts: { when?: CallFilter; at?: number[]; count?: number } = {}): this {
    const wrap = (body: ReadableStream<Uint8Array>, bodyBytes: number) => {
      const masks = new Map<number, number>(); // byte offset -> bits to flip
      for (const at of opts.at ?? []) masks.set(at, 0x01);
      const randomFlips = opts.count ?? (opts.at ? 0 : 1);
      for (let i = 0; i < randomFlips && bodyBytes > 0; i++) {
        const at = Math.floor(this.random() * bodyBytes);
        masks.set(at, (masks.get(at) ?? 0) | (1 << Math.floor(this.random() * 8)));
      }
      return corruptBody(body, masks);
    };
    this.bodyRules.push({ when: opts.when ?? always, wrap });
    return this;
  }

  /** get/head of a key written more than once here answer with the version before the latest;
   *  a key written only once looks absent (NotFound), as on a replica that lags behind. */
  serveStale(when: CallFilter = always): this {
    if (!this.opts.recordWrites) throw new Error('FaultyBackend.serveStale needs { recordWrites: true }');
    this.stale = when;
    return this;
  }

  /** Removes every fault and comes back online (the call log and write history stay). */
  heal(): this {
    this.offline = false;
    this.fails = [];
    this.rate = undefined;
    this.delays = [];
    this.hangs = [];
    this.bodyRules = [];
    this.stale = undefined;
    return this;
  }

  async put(key: string, body: PutBody, length: number, opts?: PutOptions): Promise<void> {
    const call = await this.enter('put', key, opts?.signal);
    if (!this.opts.recordWrites) {
      await this.inner.put(key, body, length, opts);
    } else {
      // Buffer to keep a copy; fine for tests, which are what recordWrites is for.
      const bytes = body instanceof Uint8Array ? body.slice() : await readAll(putBodyStream(body));
      await this.inner.put(key, bytes, length, opts);
      this.history.set(key, [...(this.history.get(key) ?? []), bytes]);
    }
    this.leave(call);
  }

  async get(key: string, range?: ByteRange, opts?: GetOptions): Promise<GetResult> {
    const call = await this.enter('get', key, opts?.signal);
    const stale = this.staleVersion(call);
    let result: GetResult;
    if (stale) {
      if (range && range.offset + range.length > stale.byteLength) throw this.injected('Corrupt', call, 'stale blob is shorter');
      const bytes = range ? stale.subarray(range.offset, range.offset + range.length) : stale;
      result = { body: bytesToStream(bytes), size: stale.byteLength };
    } else {
      result = await this.inner.get(key, range, opts);
    }
    try {
      this.leave(call);
    } catch (err) {
      await result.body.cancel().catch(() => {});
      throw err;
    }
    let body = result.body;
    const bodyBytes = range?.length ?? result.size;
    for (const rule of this.bodyRules) if (rule.when(call)) body = rule.wrap(body, bodyBytes);
    return { body, size: result.size };
  }

  async head(key: string): Promise<BlobInfo> {
    const call = await this.enter('head', key);
    const stale = this.staleVersion(call);
    const info = stale ? { size: stale.byteLength, lastModified: new Date(0) } : await this.inner.head(key);
    this.leave(call);
    return info;
  }

  /** Forwarded when the inner backend enforces retention (faults as a put). */
  get retain(): Backend['retain'] {
    const inner = this.inner;
    return inner.retain
      ? async (key, retention) => {
          const call = await this.enter('put', key);
          await inner.retain!(key, retention);
          this.leave(call);
        }
      : undefined;
  }

  async delete(key: string): Promise<void> {
    const call = await this.enter('delete', key);
    await this.inner.delete(key);
    this.leave(call);
  }

  async list(prefix: string, cursor?: string, opts?: ListOptions): Promise<ListPage> {
    const call = await this.enter('list', prefix);
    const page = await this.inner.list(prefix, cursor, opts);
    this.leave(call);
    return page;
  }

  private async enter(op: BackendOp, key: string, signal?: AbortSignal): Promise<FaultCall> {
    const call: FaultCall = { op, key, callNo: this.calls.length + 1, opCallNo: ++this.opCounts[op] };
    this.calls.push(call);
    const delayMs = this.delays.filter((d) => d.when(call)).reduce((sum, d) => sum + d.ms, 0);
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    if (this.hangs.some((h) => h(call))) {
      await new Promise<never>((_, reject) =>
        signal?.addEventListener(
          'abort',
          () => {
            this.abortedHangs.push(call);
            reject(signal.reason);
          },
          { once: true },
        ),
      );
    }
    if (this.offline) throw this.injected('Unavailable', call, 'backend offline');
    const rule = this.fails.find((f) => !f.after && f.when(call));
    if (rule) throw this.injected(rule.kind, call, 'chosen call');
    if (this.rate?.ops.includes(op) && this.random() < this.rate.rate) throw this.injected(this.rate.kind, call, 'rate');
    return call;
  }

  private leave(call: FaultCall): void {
    const rule = this.fails.find((f) => f.after && f.when(call));
    if (rule) throw this.injected(rule.kind, call, 'after the call succeeded');
  }

  /** The older blob to answer with, if serveStale applies; throws NotFound after a first write. */
  private staleVersion(call: FaultCall): Uint8Array | undefined {
    const versions = this.stale?.(call) ? this.history.get(call.key) : undefined;
    if (!versions) return undefined;
    if (versions.length < 2) throw this.injected('NotFound', call, 'stale replica has not seen this key');
    return versions[versions.length - 2];
  }

  private injected(kind: BackendErrorKind, call: FaultCall, why: string): BackendError {
    return new BackendError(this.id, kind, `injected (${why}) on ${call.op} #${call.opCallNo} of ${JSON.stringify(call.key)}`);
  }
}
