/**
 * Adding up OpsCounters: an isolate's counts into a minute's and into the all-time totals, the
 * minutes of a window into one. Reachability times merge by maximum (the latest wins, whichever
 * isolate saw it). `trafficByBucket` is what the cost report (upkeep/cost.ts) prices, and
 * `trafficByJob` the part of it the upkeep jobs made.
 */
import type { JobTraffic, TrafficCounts, UpkeepJob } from '../../backends/metered.ts';
import { addHistogram, emptyHistogram } from './histogram.ts';
import {
  BACKEND_OPS,
  type BackendCounters,
  type BackendOpName,
  type BackendSeen,
  type BucketTraffic,
  type LatencyCounters,
  type OpCounters,
  type OpsCounters,
} from './types.ts';

export function emptyCounters(): OpsCounters {
  return { backends: {}, s3: {}, s3BytesIn: 0, s3BytesOut: 0, events: {} };
}

export function emptyLatency(): LatencyCounters {
  return { count: 0, ms: 0, hist: emptyHistogram() };
}

export function emptyOp(): OpCounters {
  return { requests: 0, errors: 0, bytes: 0, ms: 0, hist: emptyHistogram() };
}

export function backendOf(c: OpsCounters, id: string): BackendCounters {
  return (c.backends[id] ??= { ops: {} });
}

export function opOf(b: BackendCounters, op: BackendOpName): OpCounters {
  return (b.ops[op] ??= emptyOp());
}

export function emptyTraffic(): BucketTraffic {
  return { requests: {}, bytesIn: 0, bytesOut: 0 };
}

function addTraffic(into: BucketTraffic, from: BucketTraffic): void {
  for (const [op, n] of Object.entries(from.requests) as [BackendOpName, number][]) into.requests[op] = (into.requests[op] ?? 0) + n;
  into.bytesIn += from.bytesIn;
  into.bytesOut += from.bytesOut;
}

const later = (a: number | undefined, b: number | undefined) => (a === undefined ? b : b === undefined ? a : Math.max(a, b));

/** Merges what is known of reachability: each time the latest; the error message goes with the latest error. */
export function addSeen(into: BackendSeen, from: BackendSeen): void {
  into.lastOkAt = later(into.lastOkAt, from.lastOkAt);
  into.lastDownAt = later(into.lastDownAt, from.lastDownAt);
  if (from.lastErrorAt !== undefined && (into.lastErrorAt === undefined || from.lastErrorAt >= into.lastErrorAt)) {
    into.lastErrorAt = from.lastErrorAt;
    into.lastError = from.lastError;
    into.lastErrorKind = from.lastErrorKind;
  }
  if (from.probe && (!into.probe || from.probe.at >= into.probe.at)) into.probe = { ...from.probe };
  for (const k of Object.keys(into) as (keyof BackendSeen)[]) if (into[k] === undefined) delete into[k];
}

export function addCounters(into: OpsCounters, from: OpsCounters): void {
  for (const [id, b] of Object.entries(from.backends)) {
    const target = backendOf(into, id);
    addSeen(target, b);
    for (const op of BACKEND_OPS) {
      const o = b.ops[op];
      if (!o) continue;
      const t = opOf(target, op);
      t.requests += o.requests;
      t.errors += o.errors;
      t.bytes += o.bytes;
      t.ms += o.ms;
      addHistogram(t.hist, o.hist);
    }
  }
  for (const [bucket, t] of Object.entries(from.clients ?? {})) {
    const into_ = ((into.clients ??= {})[bucket] ??= { requests: 0, bytesIn: 0, bytesOut: 0 });
    into_.requests += t.requests;
    into_.bytesIn += t.bytesIn;
    into_.bytesOut += t.bytesOut;
  }
  for (const [bucket, perBackend] of Object.entries(from.buckets ?? {})) {
    for (const [id, t] of Object.entries(perBackend)) addTraffic((((into.buckets ??= {})[bucket] ??= {})[id] ??= emptyTraffic()), t);
  }
  // Absent in records written before jobs were counted apart: nothing to add.
  for (const [job, perBackend] of Object.entries(from.jobs ?? {}) as [UpkeepJob, Record<string, BucketTraffic>][]) {
    for (const [id, t] of Object.entries(perBackend)) addTraffic((((into.jobs ??= {})[job] ??= {})[id] ??= emptyTraffic()), t);
  }
  for (const [k, n] of Object.entries(from.s3)) into.s3[k] = (into.s3[k] ?? 0) + n;
  for (const [op, l] of Object.entries(from.s3Latency ?? {})) {
    const t = ((into.s3Latency ??= {})[op] ??= emptyLatency());
    t.count += l.count;
    t.ms += l.ms;
    addHistogram(t.hist, l.hist);
  }
  into.s3BytesIn += from.s3BytesIn;
  into.s3BytesOut += from.s3BytesOut;
  for (const [k, n] of Object.entries(from.events) as [keyof OpsCounters['events'], number][]) into.events[k] = (into.events[k] ?? 0) + n;
}

/**
 * Per backend and bucket, the calls by kind and the bytes written and read in `c`: each bucket's
 * own, and per backend a line with bucket null for what no bucket accounts for (listings over
 * all buckets, probes).
 */
export function trafficByBucket(c: OpsCounters): TrafficCounts[] {
  const line = (backendId: string, bucket: string | null, t: BucketTraffic): TrafficCounts => ({ backendId, bucket, ...callsOf(t) });
  const out: TrafficCounts[] = [];
  for (const [id, b] of Object.entries(c.backends)) {
    const rest: BucketTraffic = { requests: {}, bytesIn: b.ops.put?.bytes ?? 0, bytesOut: b.ops.get?.bytes ?? 0 };
    for (const op of BACKEND_OPS) rest.requests[op] = b.ops[op]?.requests ?? 0;
    for (const [bucket, perBackend] of Object.entries(c.buckets ?? {})) {
      const t = perBackend[id];
      if (!t) continue;
      out.push(line(id, bucket, t));
      for (const op of BACKEND_OPS) rest.requests[op]! -= t.requests[op] ?? 0;
      rest.bytesIn -= t.bytesIn;
      rest.bytesOut -= t.bytesOut;
    }
    if (BACKEND_OPS.some((op) => rest.requests[op]! > 0) || rest.bytesIn > 0 || rest.bytesOut > 0) out.push(line(id, null, rest));
  }
  return out;
}

/**
 * Per upkeep job and backend, what the job asked of the backend in `c` (over all buckets): a part
 * of that backend's lines in trafficByBucket, not traffic besides them. Empty for records written
 * before jobs were counted apart.
 */
export function trafficByJob(c: OpsCounters): JobTraffic[] {
  const out: JobTraffic[] = [];
  for (const [job, perBackend] of Object.entries(c.jobs ?? {}) as [UpkeepJob, Record<string, BucketTraffic>][]) {
    for (const [backendId, t] of Object.entries(perBackend)) {
      out.push({ job, backendId, ...callsOf(t) });
    }
  }
  return out;
}

/** A traffic line's calls by kind and bytes, as TrafficCounts and JobTraffic carry them. */
function callsOf(t: BucketTraffic): Omit<TrafficCounts, 'backendId' | 'bucket'> {
  return {
    puts: t.requests.put ?? 0,
    gets: t.requests.get ?? 0,
    heads: t.requests.head ?? 0,
    lists: t.requests.list ?? 0,
    deletes: t.requests.delete ?? 0,
    bytesIn: t.bytesIn,
    bytesOut: t.bytesOut,
  };
}
