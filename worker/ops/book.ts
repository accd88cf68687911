/**
 * OpsBook: the shared record's logic, whatever keeps it (the OpsObject Durable Object over
 * SQLite, or memory in tests): all-time totals (Prometheus counters, monotonic since `since`),
 * one row of counters per minute (the plots and the "last 5 minutes" of the health table), and
 * data-health samples. Rows older than RETENTION_MS are dropped.
 */
import { addCounters, emptyCounters } from './counters.ts';
import type { DataSample, MinuteRow, OpsCounters, OpsDelta, OpsSnapshot } from './types.ts';

/** How long minute rows and samples are kept: the page plots up to this. */
export const RETENTION_MS = 24 * 60 * 60 * 1000;
const MINUTE_MS = 60_000;

/** Where a book keeps its rows. */
export interface BookStore {
  loadTotals(): { since: number; totals: OpsCounters } | null;
  saveTotals(since: number, totals: OpsCounters): void;
  getMinute(at: number): OpsCounters | null;
  putMinute(at: number, counters: OpsCounters): void;
  minutesSince(at: number): MinuteRow[];
  putSample(sample: DataSample): void;
  samplesSince(at: number): DataSample[];
  /** Drops minute rows and samples older than `before`. */
  prune(before: number): void;
}

export class OpsBook {
  private readonly since: number;
  private readonly totals: OpsCounters;
  private lastPrune = 0;

  constructor(
    private readonly store: BookStore,
    private readonly now: () => number = () => Date.now(),
  ) {
    const loaded = store.loadTotals();
    this.since = loaded?.since ?? now();
    this.totals = loaded?.totals ?? emptyCounters();
  }

  record(delta: OpsDelta): void {
    const { at, ...counters } = delta;
    addCounters(this.totals, counters);
    const minute = Math.floor(at / MINUTE_MS) * MINUTE_MS;
    const row = this.store.getMinute(minute) ?? emptyCounters();
    const { buckets: _perBucket, jobs: _perJob, clients: _perClient, ...perMinute } = counters; // per-bucket and per-job traffic: totals only (the cost report's), not every minute
    addCounters(row, perMinute);
    for (const [name, n] of Object.entries(counters.events) as [keyof OpsCounters['events'], number][]) {
      if (n > 0 && !(row.eventsFirstAt ??= {})[name]) row.eventsFirstAt[name] = at;
    }
    this.store.putMinute(minute, row);
    this.store.saveTotals(this.since, this.totals);
    this.pruneNow();
  }

  sample(s: DataSample): void {
    this.store.putSample(s);
    this.pruneNow();
  }

  snapshot(sinceMs: number): OpsSnapshot {
    const probes = Object.values(this.totals.backends).flatMap((b) => (b.probe ? [b.probe.at] : []));
    return {
      now: this.now(),
      since: this.since,
      totals: structuredClone(this.totals),
      minutes: this.store.minutesSince(Math.floor(sinceMs / MINUTE_MS) * MINUTE_MS),
      samples: this.store.samplesSince(sinceMs),
      lastProbeAt: probes.length ? Math.max(...probes) : null,
    };
  }

  private pruneNow(): void {
    const now = this.now();
    if (now - this.lastPrune < 10 * MINUTE_MS) return;
    this.lastPrune = now;
    this.store.prune(now - RETENTION_MS);
  }
}

/** A BookStore in memory (tests, and a gateway without the OPS binding). */
export class MemoryBookStore implements BookStore {
  private totals: { since: number; totals: OpsCounters } | null = null;
  private readonly minutes = new Map<number, OpsCounters>();
  private samples: DataSample[] = [];

  loadTotals() {
    return this.totals && structuredClone(this.totals);
  }
  saveTotals(since: number, totals: OpsCounters) {
    this.totals = structuredClone({ since, totals });
  }
  getMinute(at: number) {
    const m = this.minutes.get(at);
    return m ? structuredClone(m) : null;
  }
  putMinute(at: number, counters: OpsCounters) {
    this.minutes.set(at, structuredClone(counters));
  }
  minutesSince(at: number): MinuteRow[] {
    return [...this.minutes]
      .filter(([m]) => m >= at)
      .sort((a, b) => a[0] - b[0])
      .map(([m, c]) => ({ at: m, counters: structuredClone(c) }));
  }
  putSample(sample: DataSample) {
    this.samples = [...this.samples.filter((s) => s.at !== sample.at), { ...sample }].sort((a, b) => a.at - b.at);
  }
  samplesSince(at: number) {
    return this.samples.filter((s) => s.at >= at).map((s) => ({ ...s }));
  }
  prune(before: number) {
    for (const m of [...this.minutes.keys()]) if (m < before) this.minutes.delete(m);
    this.samples = this.samples.filter((s) => s.at >= before);
  }
}

/** The OpsRecord contract over a book in this isolate's memory. */
export class MemoryOpsRecord {
  readonly book: OpsBook;
  constructor(now: () => number = () => Date.now()) {
    this.book = new OpsBook(new MemoryBookStore(), now);
  }
  async record(delta: OpsDelta) {
    this.book.record(structuredClone(delta));
  }
  async sample(s: DataSample) {
    this.book.sample({ ...s });
  }
  async snapshot(sinceMs: number) {
    return this.book.snapshot(sinceMs);
  }
}
