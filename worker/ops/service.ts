/**
 * OpsService: what the operator routes and the cron ask of the gateway's self-knowledge. A status
 * read first flushes this isolate's counts (so it sees its own traffic), probes the backends when
 * the last probe is older than `probeEveryMs` (if asked to), reads the shared record and every
 * bucket's health, records a data-health sample when the last is a minute old, and builds the
 * document. The cron probes, samples and flushes on every run.
 */
import type { Backend } from '../../backends/types.ts';
import type { HealthCatalog } from '../catalog/ports.ts';
import { readDataHealth, sampleOf } from './data-health.ts';
import type { OpsFlusher } from './flusher.ts';
import type { IsolateMeter } from './meter.ts';
import { backendHealth } from './health.ts';
import { probeBackends } from './probe.ts';
import { countUnreachableAsMissing, unreachableIds } from './unreachable.ts';
import { VERSION, isolateStartedAt } from './build-info.ts';
import { buildStatus, type BudgetGauge, type BuildInfo, type StatusConfig, type StatusDoc } from './status.ts';
import type { OpsCounters, OpsRecord, OpsSnapshot } from './types.ts';

/** A status read records a data-health sample when the last one is this old (the cron: every run). */
export const SAMPLE_EVERY_MS = 60_000;
/** The longest series a status carries (the record keeps 24 hours). */
export const MAX_HOURS = 24;

export interface OpsServiceDeps {
  config: StatusConfig;
  catalog: HealthCatalog;
  /** The metered backends: probes count as traffic like any call. */
  backends: Backend[];
  meter: IsolateMeter;
  record: OpsRecord;
  flusher: OpsFlusher;
  probeEveryMs: number;
  /** This isolate's coding budget now (engine/coding-budget.ts). */
  codingBudget?: () => BudgetGauge;
  /** The version and the isolate's start (default: build-info.ts's). */
  build?: () => BuildInfo;
  /**
   * What the probes of the review find wrong (the adopted buckets' sources, adopt/source-probe.ts;
   * the transit keys of KMS keys, engine/transit-probe.ts): joins the review's warnings.
   */
  probedWarnings?: () => Promise<string[]>;
}

const thisBuild = (): BuildInfo => ({ version: VERSION, isolateStartedAt: isolateStartedAt() });

export class OpsService {
  constructor(private readonly deps: OpsServiceDeps) {
    (deps.build ?? thisBuild)(); // the isolate's start: when its gateway is built
  }

  /** The status document over the last `hours`, and the all-time counters (for the metrics). */
  async status(o: { signed: boolean; hours: number; probe: boolean }): Promise<{ doc: StatusDoc; totals: OpsCounters }> {
    const { flusher, record, catalog } = this.deps;
    await flusher.flush();
    const from = Date.now() - Math.min(MAX_HOURS, Math.max(0, o.hours)) * 3_600_000;
    let snapshot = await record.snapshot(from);
    if (o.probe && (snapshot.lastProbeAt === null || Date.now() - snapshot.lastProbeAt >= this.deps.probeEveryMs)) {
      await probeBackends(this.deps.backends, this.deps.meter);
      await flusher.flush();
      snapshot = await record.snapshot(from);
    }
    const data = countUnreachableAsMissing(await readDataHealth(catalog, new Date()), this.unreachable(snapshot));
    const last = snapshot.samples.at(-1);
    if (!last || data.at - last.at >= SAMPLE_EVERY_MS) await record.sample(sampleOf(data)).catch(() => {}); // a sample is never worth failing a read
    const codingBudget = this.deps.codingBudget?.();
    const probed = (await this.deps.probedWarnings?.().catch(() => [])) ?? [];
    const config = probed.length
      ? { ...this.deps.config, deployment: { ...this.deps.config.deployment, warnings: [...this.deps.config.deployment.warnings, ...probed] } }
      : this.deps.config;
    return {
      doc: buildStatus({ config, snapshot, data, signed: o.signed, from, codingBudget, build: (this.deps.build ?? thisBuild)() }),
      totals: snapshot.totals,
    };
  }

  /** The cron's part: probe every backend, record a data-health sample, flush. */
  async onCron(): Promise<void> {
    await probeBackends(this.deps.backends, this.deps.meter);
    await this.deps.probedWarnings?.().catch(() => []); // logged by the probes
    await this.deps.flusher.flush(); // the probes, before the sample counts what they found down
    const snapshot = await this.deps.record.snapshot(Date.now());
    const data = countUnreachableAsMissing(await readDataHealth(this.deps.catalog, new Date()), this.unreachable(snapshot));
    await this.deps.record.sample(sampleOf(data));
    await this.deps.flusher.flush();
  }

  /** Backends whose shards cannot be read now (ops/unreachable.ts), from the shared record. */
  private unreachable(snapshot: OpsSnapshot): Set<string> {
    return unreachableIds(this.deps.config.backends.map((b) => backendHealth(b, snapshot.totals.backends[b.id], undefined, undefined)));
  }
}
