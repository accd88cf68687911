/**
 * Talking to a running gateway's operator API: the endpoint and key come from options or the
 * environment (--endpoint / SHARDGATE_ENDPOINT, --access-key-id / AWS_ACCESS_KEY_ID,
 * --secret-access-key / AWS_SECRET_ACCESS_KEY, --region / AWS_REGION), and every request is
 * signed with SigV4 by aws4fetch (the admin API accepts nothing else), with no retries: a command
 * that fails says so at once. Errors come back as the operator routes' JSON {code, message}.
 */
import { AwsClient } from 'aws4fetch';
import { CliError } from './command.ts';
import type { PolicyRedundancy } from '../worker/catalog/redundancy.ts';

export const GATEWAY_OPTIONS = {
  endpoint: { type: 'string' },
  region: { type: 'string' },
  'access-key-id': { type: 'string' },
  'secret-access-key': { type: 'string' },
  json: { type: 'boolean' },
} as const;

export const GATEWAY_HELP = `Gateway options:
  --endpoint URL             the gateway (SHARDGATE_ENDPOINT; default http://127.0.0.1:8787)
  --access-key-id ID         a configured access key (AWS_ACCESS_KEY_ID)
  --secret-access-key KEY    its secret (AWS_SECRET_ACCESS_KEY)
  --region REGION            the gateway's region (AWS_REGION, AWS_DEFAULT_REGION; default us-east-1)
  --json                     print the answer as JSON`;

export interface GatewayOptionValues {
  endpoint?: string;
  region?: string;
  'access-key-id'?: string;
  'secret-access-key'?: string;
}

export class GatewayClient {
  readonly endpoint: string;
  private readonly signer: AwsClient | null;

  constructor(values: GatewayOptionValues, env: NodeJS.ProcessEnv = process.env, requireKey = true) {
    this.endpoint = (values.endpoint ?? env.SHARDGATE_ENDPOINT ?? 'http://127.0.0.1:8787').replace(/\/+$/, '');
    const accessKeyId = values['access-key-id'] ?? env.AWS_ACCESS_KEY_ID;
    const secretAccessKey = values['secret-access-key'] ?? env.AWS_SECRET_ACCESS_KEY;
    const region = values.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1';
    if (accessKeyId && secretAccessKey) this.signer = new AwsClient({ accessKeyId, secretAccessKey, service: 's3', region, retries: 0 });
    else if (requireKey)
      throw new CliError(
        'no access key: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or --access-key-id and --secret-access-key); npm start prints the local ones',
      );
    else this.signer = null;
  }

  get signed(): boolean {
    return this.signer !== null;
  }

  async request(method: 'GET' | 'POST', path: string, query: Record<string, string | undefined> = {}): Promise<unknown> {
    const url = new URL(this.endpoint + path);
    for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, v);
    let res: Response;
    try {
      res = this.signer ? await this.signer.fetch(url.toString(), { method }) : await fetch(url, { method });
    } catch (err) {
      throw new CliError(`cannot reach the gateway at ${this.endpoint}: ${String((err as Error)?.cause ?? (err as Error)?.message ?? err)}`);
    }
    const text = await res.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new CliError(`${method} ${url.pathname}: HTTP ${res.status}, not JSON: ${text.slice(0, 200)}`);
    }
    if (!res.ok) {
      const e = body as { code?: string; message?: string };
      throw new CliError(`${method} ${url.pathname}: ${e.code ?? res.status}: ${e.message ?? text.slice(0, 200)}`);
    }
    return body;
  }

  admin(action: string, query: Record<string, string | undefined> = {}): Promise<unknown> {
    return this.request('POST', `/_shardgate/admin/${action}`, query);
  }

  status(hours = 1): Promise<StatusLike> {
    return this.request('GET', '/_shardgate/status', { hours: String(hours) }) as Promise<StatusLike>;
  }
}

/** The parts of the status document (worker/ops/status.ts) the commands read. */
export interface StatusLike {
  /** Absent from gateways older than the field. */
  version?: string;
  now: number;
  signed: boolean;
  health: string;
  /** Absent from gateways older than the field. */
  checks?: { name: string; state: string; detail: string; action?: string }[];
  coder: { kernel: string };
  /** The deployment review's warnings (with its probes'), the text only when signed; absent from gateways older than the field. */
  deployment?: { mode: string; warningCount: number; warnings?: string[] };
  backends: {
    id: string;
    domain: string;
    state: string;
    lastOkAt: number | null;
    lastErrorAt: number | null;
    lastError?: string | null;
    recent: { requests: number; errorRate: number | null; latencyMs: { p50: number | null; p99: number | null } };
    storedBytes: number;
    storedShards: number;
    fleetState?: string;
    maintenance?: boolean;
  }[];
  data: {
    buckets: number;
    objects: number;
    bytes: number;
    storedBytes: number;
    overhead: number | null;
    replicationOverhead: number;
    degradedObjects: number;
    degradedUnits: number;
    missingShards: number;
    redundancy?: {
      atRisk: number;
      lost: number;
      byMissing?: Record<string, number>;
      /** Absent from gateways older than the fields. */
      atRiskBytes?: number;
      lostBytes?: number;
      byPolicy?: Record<string, PolicyRedundancy>;
    };
    repairStuck?: number;
    uploads: number;
    reservations: { held: number; expired: number };
    garbage: { queued: number; due: number };
    scrub: {
      mode: string;
      checked: number;
      units: number;
      coverage: number | null;
      oldestUnchecked: { bucket?: string; key?: string; unitId?: string; since: number } | null;
      oldestPassCompletedAt: number | null;
    };
    /** Versions, object bytes and stored bytes per storage class (absent from gateways older than the field). */
    classes?: Record<string, { objects: number; bytes: number; storedBytes: number }>;
    /** The re-stripe (absent from gateways older than the field). */
    restripe?: {
      buckets: number;
      leftUnits: number;
      leftBytes: number;
      rewrittenVersions: number;
      rewrittenBytes: number;
      bytesPerSecond: number | null;
      secondsRemaining: number | null;
    };
  };
  upkeep: {
    repairsDone: number;
    repairsFailed: number;
    scrubRuns: number;
    collectedUnits: number;
    /** Absent from gateways older than the field. */
    rates?: {
      repairUnitsPerMinute: number;
      repairSecondsLeft: number | null;
      repairActiveSince?: number | null;
      scrubUnitsPerMinute: number;
      scrubSecondsLeft: number | null;
      scrubActiveSince?: number | null;
    };
  };
  /** `recent` absent from gateways older than the field. */
  s3?: { requests: number; errors: number; recent?: Record<string, { requests: number; p50Ms: number | null; p99Ms: number | null }> };
  isolate?: {
    startedAt?: number;
    uptimeSeconds?: number;
    codingBudget: { capacityBytes: number; heldBytes: number; holders: number; waiters: number; oldestHeldMs: number | null; reclaimed: number };
  };
  buckets?: {
    bucket: string;
    objects: number;
    bytes: number;
    storedBytes: number;
    degradedObjects: number;
    scrub: { checked: number; units: number; lastPassCompletedAt: number | null; passStartedAt: number | null; passes: number };
    scrubCoverage: number | null;
    redundancy?: { byPolicy?: Record<string, PolicyRedundancy> };
    /** Absent from gateways older than quotas (issue 45). */
    versions?: number;
    deleteMarkers?: number;
    multipartBytes?: number;
    quota?: { bytes: number | null; objects: number | null; usedBytes: number; usedObjects: number };
    monthlyStorageCost?: number | null;
    /** The clients' requests naming the bucket and their bytes (absent from older gateways). */
    clientTraffic?: { requests: number; bytesIn: number; bytesOut: number };
    /** Each catalog partition (absent from gateways older than on-line splits, issue 39). */
    partitions?: { low: string; versions: number; databaseBytes: number; splitting: string | null; merging?: string | null }[];
    /** Event notification delivery per destination (absent: none queued; a gateway older than them). */
    events?: EventDestinationLike[];
  }[];
}

/** One destination's event delivery figures (worker/catalog/sql-outbox.ts DestinationEvents). */
export interface EventDestinationLike {
  destination: string;
  backlog: number;
  queued: number;
  delivered: number;
  retried: number;
  deadLettered: number;
  dropped: number;
  oldestUndeliveredMs: number | null;
  lastError: string | null;
  nextAttemptAt: number | null;
}

/** The event notification table: one row per bucket and destination (`shardgate status`, `shardgate events`). */
export function eventRows(buckets: { bucket: string; events?: EventDestinationLike[] }[]): string[][] {
  return buckets.flatMap((b) =>
    (b.events ?? []).map((d) => [
      b.bucket,
      d.destination,
      String(d.backlog),
      String(d.delivered),
      String(d.retried),
      String(d.deadLettered),
      String(d.dropped),
      d.oldestUndeliveredMs === null ? '-' : `${Math.round(d.oldestUndeliveredMs / 1000)} s`,
      d.lastError ?? '',
    ]),
  );
}
export const EVENT_HEADER = ['BUCKET', 'DESTINATION', 'WAITING', 'DELIVERED', 'RETRIED', 'DEAD', 'DROPPED', 'OLDEST WAITING', 'LAST ERROR'];
