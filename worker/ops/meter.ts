/**
 * IsolateMeter: what one isolate counts between two flushes to the shared record (a Durable
 * Object; see flusher.ts): every backend call (from backends/metered.ts), every S3 request,
 * upkeep events and probe results. Counting is a few additions in memory, so nothing is written
 * per request. It also keeps a tally per request (an AsyncLocalStorage, so code deep in the
 * engine needs no parameter) for the request's log line: how many backend calls it made. The
 * same way, an upkeep job (`job`: the fleet mover, the re-stripe) has its backend calls counted
 * apart as well, so the cost report can say what a drain or a re-stripe cost.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { BackendCallReport, UpkeepJob } from '../../backends/metered.ts';
import { directoryOfShardKey } from '../format/shard-key.ts';
import { bucketOf } from './histogram.ts';
import { addCounters, backendOf, emptyCounters, emptyLatency, emptyTraffic, opOf } from './counters.ts';
import type { BucketTraffic, EventName, OpsCounters, OpsDelta } from './types.ts';

/** Failures that mean "the backend is not there" (not a wrong answer from a live one). */
const DOWN_KINDS: ReadonlySet<string> = new Set(['Unavailable', 'Timeout', 'Throttled']);

/** Backend calls made on behalf of one request. */
export interface RequestTally {
  backendCalls: number;
  backendErrors: number;
}

export class IsolateMeter {
  private pending: OpsCounters = emptyCounters();
  private dirty = false;
  private readonly tallies = new AsyncLocalStorage<RequestTally>();
  private readonly jobs = new AsyncLocalStorage<UpkeepJob>();

  constructor(private readonly now: () => number = () => Date.now()) {}

  /** True when something was counted since the last take(). */
  get hasPending(): boolean {
    return this.dirty;
  }

  /** Runs `fn` as one request, whose backend calls are tallied in `tally`. */
  withTally<T>(tally: RequestTally, fn: () => T): T {
    return this.tallies.run(tally, fn);
  }

  /**
   * Runs `fn` as upkeep job `name`: every backend call made inside it (in the promises it starts
   * too, whenever they end) is also counted under `jobs[name][backend]`, as bucket traffic is
   * counted (requests by kind, bytes in for puts, bytes out for gets), over all buckets. The
   * calls still count in the backend's and the bucket's lines: the job's lines are a breakdown,
   * not a subtraction. Calls made outside (a client request running meanwhile) are not the job's.
   * A job inside another job counts as the inner one.
   */
  job<T>(name: UpkeepJob, fn: () => Promise<T>): Promise<T> {
    return this.jobs.run(name, fn);
  }

  backendCall(r: BackendCallReport): void {
    const b = backendOf(this.pending, r.backend);
    const op = opOf(b, r.op);
    const failed = r.outcome !== 'ok' && r.outcome !== 'Aborted';
    op.requests++;
    op.bytes += r.bytes;
    op.ms += r.ms;
    op.hist[bucketOf(r.ms)]!++;
    const at = this.now();
    if (failed) {
      op.errors++;
      b.lastErrorAt = at;
      b.lastError = `${r.op}: ${r.message ?? r.outcome}`.slice(0, 300);
      b.lastErrorKind = r.outcome;
      if (DOWN_KINDS.has(r.outcome)) b.lastDownAt = at;
    } else if (r.outcome === 'ok') {
      b.lastOkAt = at;
    }
    // By the key's directory: a bucket, or one of its shelves (the cost report names the bucket).
    const bucket = directoryOfShardKey(r.key);
    if (bucket !== null) countTraffic((((this.pending.buckets ??= {})[bucket] ??= {})[r.backend] ??= emptyTraffic()), r);
    const job = this.jobs.getStore();
    if (job !== undefined) countTraffic((((this.pending.jobs ??= {})[job] ??= {})[r.backend] ??= emptyTraffic()), r);
    const tally = this.tallies.getStore();
    if (tally) {
      tally.backendCalls++;
      if (failed) tally.backendErrors++;
    }
    this.dirty = true;
  }

  /** A probe's verdict: recorded as the backend's latest probe (its call was counted by backendCall). */
  probe(backend: string, result: { ok: boolean; ms: number; error?: string }): void {
    backendOf(this.pending, backend).probe = { at: this.now(), ...result };
    this.event('probes');
  }

  /** An S3 request answered: `ms` to its response headers; `bucket`: the bucket it named (usage per bucket). */
  s3Request(operation: string, status: number, bytesIn: number, bytesOut: number, ms: number, bucket?: string): void {
    if (bucket) {
      const t = ((this.pending.clients ??= {})[bucket] ??= { requests: 0, bytesIn: 0, bytesOut: 0 });
      t.requests++;
      t.bytesIn += bytesIn;
      t.bytesOut += bytesOut;
    }
    const k = `${operation} ${status}`;
    this.pending.s3[k] = (this.pending.s3[k] ?? 0) + 1;
    const l = ((this.pending.s3Latency ??= {})[operation] ??= emptyLatency());
    l.count++;
    l.ms += ms;
    l.hist[bucketOf(ms)]!++;
    this.pending.s3BytesIn += bytesIn;
    this.pending.s3BytesOut += bytesOut;
    this.dirty = true;
  }

  event(name: EventName, n = 1): void {
    this.pending.events[name] = (this.pending.events[name] ?? 0) + n;
    this.dirty = true;
  }

  /** Takes what was counted (null when nothing was); counting starts afresh. */
  take(): OpsDelta | null {
    if (!this.dirty) return null;
    const delta: OpsDelta = { ...this.pending, at: this.now() };
    this.pending = emptyCounters();
    this.dirty = false;
    return delta;
  }

  /** Puts back a delta that could not be sent, to go with the next one. */
  restore(delta: OpsDelta): void {
    addCounters(this.pending, delta);
    this.dirty = true;
  }
}

/** One call into a traffic line: its kind, the bytes of a put (in) or a get (out, egress). */
function countTraffic(t: BucketTraffic, r: BackendCallReport): void {
  t.requests[r.op] = (t.requests[r.op] ?? 0) + 1;
  if (r.op === 'put') t.bytesIn += r.bytes;
  else if (r.op === 'get') t.bytesOut += r.bytes;
}
