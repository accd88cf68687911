/**
 * The vocabulary of what the gateway knows about itself (issue 13): what one isolate counted
 * (OpsDelta, sent to the shared record every few seconds), what the record keeps (cumulative
 * totals, per-minute rows, per-backend reachability, data-health samples) and what it answers
 * (OpsSnapshot). Plain JSON values: they cross Durable Object RPC and are stored as JSON.
 * Counters are plain numbers on purpose: cost accounting (issue 14) prices requests by kind and
 * bytes per backend and bucket from `totals` (see `trafficByBucket` in counters.ts), and what the
 * upkeep jobs asked of each backend (`trafficByJob`).
 */
import type { UpkeepJob } from '../../backends/metered.ts';

export type { UpkeepJob };

export const BACKEND_OPS = ['put', 'get', 'head', 'delete', 'list'] as const;
export type BackendOpName = (typeof BACKEND_OPS)[number];

/** Upper bounds (ms) of the latency histogram buckets; one more bucket counts everything slower. */
export const LATENCY_BUCKETS_MS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 30_000] as const;

/** Calls of one operation on one backend. */
export interface OpCounters {
  requests: number;
  /** Calls that failed (NotFound and PreconditionFailed are answers, not failures). */
  errors: number;
  /** put: bytes sent to the backend; get: bytes read from it (egress); others 0. */
  bytes: number;
  /** Sum of the calls' durations in ms. */
  ms: number;
  /** Calls per latency bucket: LATENCY_BUCKETS_MS.length + 1 counts. */
  hist: number[];
}

/** Durations of some calls: their count, sum (ms) and LATENCY_BUCKETS_MS histogram. */
export interface LatencyCounters {
  count: number;
  ms: number;
  hist: number[];
}

/** What is known of one backend's reachability; times are ms since the epoch. */
export interface BackendSeen {
  /** The latest call the backend answered (a NotFound is an answer). */
  lastOkAt?: number;
  /** The latest call that failed because the backend was unreachable, timed out or throttled. */
  lastDownAt?: number;
  /** The latest failure of any kind, and its message. */
  lastErrorAt?: number;
  lastError?: string;
  lastErrorKind?: string;
  /** The latest probe (a HEAD of a key that does not exist: NotFound means the backend answered). */
  probe?: { at: number; ok: boolean; ms: number; error?: string };
}

export interface BackendCounters extends BackendSeen {
  ops: Partial<Record<BackendOpName, OpCounters>>;
}

/** Upkeep and front-door events, counted. */
export const EVENT_NAMES = [
  'repairs_queued',
  'repairs_done',
  'repairs_failed',
  'repaired_shards',
  'scrub_runs',
  'scrub_units',
  'scrub_shards',
  'scrub_damaged',
  'collector_runs',
  'collected_units',
  'probes',
  'drain_runs',
  'moved_shards',
  'moved_bytes',
  'move_waits',
  'restripe_runs',
  'restriped_versions',
  'restriped_bytes',
  'restripe_conflicts',
  'restripe_failures',
  'journal_runs',
  'journal_segments',
  'journal_bytes',
  'journal_failures',
  'lifecycle_runs',
  'lifecycle_examined',
  'lifecycle_expired',
  'lifecycle_noncurrent_deleted',
  'lifecycle_markers_removed',
  'lifecycle_uploads_aborted',
  'lifecycle_failed',
  'lifecycle_transitioned',
  'lifecycle_transitioned_bytes',
  'lifecycle_transitions_blocked',
] as const;
export type EventName = (typeof EVENT_NAMES)[number];

/** One bucket's calls to one backend (the bucket read from the shard key): what the cost report prices. */
export interface BucketTraffic {
  /** Calls by kind, failed ones too (providers bill them). */
  requests: Partial<Record<BackendOpName, number>>;
  /** Bytes sent in puts. */
  bytesIn: number;
  /** Bytes asked for in gets that were answered (egress). */
  bytesOut: number;
}

/** One bucket's S3 requests from clients: how many, request body bytes, response body bytes (egress). */
export interface ClientTraffic {
  requests: number;
  bytesIn: number;
  bytesOut: number;
}

/** Counters over some time: an isolate's since its last flush, a minute's, or all time. */
export interface OpsCounters {
  backends: Record<string, BackendCounters>;
  /** bucket -> backend -> its traffic. Kept in the totals only (minute rows leave it out). */
  buckets?: Record<string, Record<string, BucketTraffic>>;
  /**
   * upkeep job -> backend -> the calls made inside that job (meter.ts `job`), over all buckets:
   * a breakdown of `backends` and `buckets`, which count the same calls too. Kept in the totals
   * only, like `buckets`. Absent in records written before it existed.
   */
  jobs?: Partial<Record<UpkeepJob, Record<string, BucketTraffic>>>;
  /**
   * bucket -> the clients' S3 requests naming it and their body bytes in and out (egress to
   * clients): usage per bucket (issue 45). Kept in the totals only, like `buckets`. Absent in
   * records written before it existed.
   */
  clients?: Record<string, ClientTraffic>;
  /** S3 requests by `<operation> <status>` (e.g. "GetObject 200"). */
  s3: Record<string, number>;
  /**
   * Time to the response headers of S3 requests, by operation: what clients wait before the
   * first byte (a streamed body goes on after). Absent in records written before it existed.
   */
  s3Latency?: Record<string, LatencyCounters>;
  /** Request body bytes received and response body bytes sent by the S3 front door. */
  s3BytesIn: number;
  s3BytesOut: number;
  events: Partial<Record<EventName, number>>;
  /**
   * Minute rows only: when each event was first carried in this minute (the flush's time), so a
   * rate can start where the activity did (active-rate.ts). Absent in rows written before it existed.
   */
  eventsFirstAt?: Partial<Record<EventName, number>>;
}

/** What an isolate sends: its counters since the last flush, taken at `at`. */
export interface OpsDelta extends OpsCounters {
  at: number;
}

/** Data health at one moment, summed over every bucket (catalog/types.ts BucketHealth). */
export interface DataSample {
  at: number;
  objects: number;
  bytes: number;
  storedBytes: number;
  degradedObjects: number;
  degradedUnits: number;
  missingShards: number;
  /** Units with exactly k shards left (reads at risk) and with fewer (lost), as recorded. */
  unitsAtRisk: number;
  unitsLost: number;
  garbageQueued: number;
  garbageDue: number;
  reservationsExpired: number;
}

export interface MinuteRow {
  /** Start of the minute, ms since the epoch. */
  at: number;
  counters: OpsCounters;
}

/** What the shared record answers. */
export interface OpsSnapshot {
  now: number;
  /** When the record started counting (the Prometheus counters' reset time). */
  since: number;
  totals: OpsCounters;
  minutes: MinuteRow[];
  samples: DataSample[];
  lastProbeAt: number | null;
}

/** The shared record: one per gateway (worker/ops/ops-object.ts), or in memory for tests. */
export interface OpsRecord {
  record(delta: OpsDelta): Promise<void>;
  sample(sample: DataSample): Promise<void>;
  /** Totals, and the minutes and samples since `sinceMs`. */
  snapshot(sinceMs: number): Promise<OpsSnapshot>;
}
