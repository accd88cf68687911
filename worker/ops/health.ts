/**
 * A backend's health as the table and the metrics show it, derived from the shared record: is it
 * reachable (its latest answer is later than its latest "not there" failure, probes included),
 * how often it failed and how fast it answered over the last few minutes of real traffic.
 * States: 'up'; 'degraded' (reachable, but more than 5% of the window's calls failed, as right
 * after an outage); 'down' (the latest call or probe could not reach it); 'unknown' (no call yet).
 */
import { addCounters, emptyCounters } from './counters.ts';
import { addHistogram, emptyHistogram, quantile } from './histogram.ts';
import { BACKEND_OPS, type BackendCounters, type BackendOpName, type MinuteRow } from './types.ts';

/** The window of "recent" traffic for error rates and latency percentiles. */
export const HEALTH_WINDOW_MS = 5 * 60_000;
const DEGRADED_ERROR_RATE = 0.05;

export type BackendState = 'up' | 'degraded' | 'down' | 'unknown';

export interface BackendHealth {
  id: string;
  domain: string;
  state: BackendState;
  reachable: boolean | null;
  lastOkAt: number | null;
  lastErrorAt: number | null;
  lastErrorKind: string | null;
  /** The latest failure's message: only in a signed status (it may name hosts). */
  lastError?: string | null;
  probe: { at: number; ok: boolean; ms: number } | null;
  /** Calls over the last HEALTH_WINDOW_MS. */
  recent: {
    requests: number;
    errors: number;
    errorRate: number | null;
    latencyMs: { p50: number | null; p90: number | null; p99: number | null };
    latencyOf: BackendOpName | 'all' | null;
  };
  /** All-time counts (since the record started): requests by kind, bytes written and read. */
  requests: Record<BackendOpName, number>;
  errors: number;
  bytesWritten: number;
  bytesRead: number;
  /** Its place in the fleet (config "state"): a draining or retired backend's stored shards are what the mover has left. */
  fleetState: 'active' | 'draining' | 'retired';
  /** Put in maintenance by the operator (config `maintenance`): known down, never called, no warning of its own. */
  maintenance: boolean;
  /** Shard files of committed objects on this backend, and their bytes (from the catalog). */
  storedShards: number;
  storedBytes: number;
}

/** The counters of the minutes at or after `from`, added up. */
export function windowCounters(minutes: MinuteRow[], from: number) {
  const c = emptyCounters();
  for (const m of minutes) if (m.at + 60_000 > from) addCounters(c, m.counters);
  return c;
}

export function backendHealth(
  backend: { id: string; domain: string; state?: BackendHealth['fleetState']; maintenance?: boolean },
  totals: BackendCounters | undefined,
  recent: BackendCounters | undefined,
  stored: { shards: number; bytes: number } | undefined,
): BackendHealth {
  const seen = totals ?? { ops: {} };
  const okAt = Math.max(seen.lastOkAt ?? -1, seen.probe?.ok ? seen.probe.at : -1);
  const downAt = Math.max(seen.lastDownAt ?? -1, seen.probe && !seen.probe.ok ? seen.probe.at : -1);
  const reachable = okAt < 0 && downAt < 0 ? null : okAt >= downAt;
  let requests = 0,
    errors = 0;
  for (const op of BACKEND_OPS) {
    requests += recent?.ops[op]?.requests ?? 0;
    errors += recent?.ops[op]?.errors ?? 0;
  }
  const errorRate = requests ? errors / requests : null;
  const state: BackendState = reachable === null ? 'unknown' : !reachable ? 'down' : errorRate !== null && errorRate > DEGRADED_ERROR_RATE ? 'degraded' : 'up';
  // Reads are what clients wait for: their latency when there were any, else any call's.
  const latencyOf: BackendOpName | 'all' | null = recent?.ops.get?.requests ? 'get' : recent?.ops.head?.requests ? 'head' : requests ? 'all' : null;
  const hist = emptyHistogram();
  if (latencyOf === 'all') for (const op of BACKEND_OPS) addHistogram(hist, recent?.ops[op]?.hist ?? []);
  else if (latencyOf) addHistogram(hist, recent!.ops[latencyOf]!.hist);
  const round = (x: number | null) => (x === null ? null : Math.round(x * 10) / 10);
  return {
    id: backend.id,
    domain: backend.domain,
    state,
    reachable,
    lastOkAt: seen.lastOkAt ?? null,
    lastErrorAt: seen.lastErrorAt ?? null,
    lastErrorKind: seen.lastErrorKind ?? null,
    lastError: seen.lastError ?? null,
    probe: seen.probe ? { at: seen.probe.at, ok: seen.probe.ok, ms: seen.probe.ms } : null,
    recent: {
      requests,
      errors,
      errorRate,
      latencyMs: { p50: round(quantile(hist, 0.5)), p90: round(quantile(hist, 0.9)), p99: round(quantile(hist, 0.99)) },
      latencyOf,
    },
    requests: Object.fromEntries(BACKEND_OPS.map((op) => [op, seen.ops[op]?.requests ?? 0])) as Record<BackendOpName, number>,
    errors: BACKEND_OPS.reduce((n, op) => n + (seen.ops[op]?.errors ?? 0), 0),
    bytesWritten: seen.ops.put?.bytes ?? 0,
    bytesRead: seen.ops.get?.bytes ?? 0,
    fleetState: backend.state ?? 'active',
    maintenance: backend.maintenance ?? false,
    storedShards: stored?.shards ?? 0,
    storedBytes: stored?.bytes ?? 0,
  };
}
