/**
 * Adding up OpsCounters: an isolate's counts into a minute's and into the all-time totals, the
 * minutes of a window into one. Reachability times merge by maximum (the latest wins, whichever
 * isolate saw it). `backendUsage` is the small read API cost accounting (issue 14) prices.
 */
import { addHistogram, emptyHistogram } from './histogram.ts';
import { BACKEND_OPS, type BackendCounters, type BackendOpName, type BackendSeen, type OpCounters, type OpsCounters } from './types.ts';

export function emptyCounters(): OpsCounters {
  return { backends: {}, s3: {}, s3BytesIn: 0, s3BytesOut: 0, events: {} };
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
  for (const [k, n] of Object.entries(from.s3)) into.s3[k] = (into.s3[k] ?? 0) + n;
  into.s3BytesIn += from.s3BytesIn;
  into.s3BytesOut += from.s3BytesOut;
  for (const [k, n] of Object.entries(from.events) as [keyof OpsCounters['events'], number][]) into.events[k] = (into.events[k] ?? 0) + n;
}

/** The counters of several periods added up. */
export function sumCounters(list: OpsCounters[]): OpsCounters {
  const out = emptyCounters();
  for (const c of list) addCounters(out, c);
  return out;
}

/** Requests by kind and bytes of one backend: what a provider bills (requests per class, egress). */
export interface BackendUsage {
  backend: string;
  requests: Record<BackendOpName, number>;
  /** Bytes written to the backend (put bodies). */
  bytesWritten: number;
  /** Bytes read from it (get bodies asked for): egress on providers that charge for it. */
  bytesRead: number;
}

/** Per backend, the requests by kind and the bytes written and read in `c` (totals, or a window). */
export function backendUsage(c: OpsCounters): BackendUsage[] {
  return Object.entries(c.backends).map(([backend, b]) => ({
    backend,
    requests: Object.fromEntries(BACKEND_OPS.map((op) => [op, b.ops[op]?.requests ?? 0])) as Record<BackendOpName, number>,
    bytesWritten: b.ops.put?.bytes ?? 0,
    bytesRead: b.ops.get?.bytes ?? 0,
  }));
}
