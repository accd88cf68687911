/**
 * The gateway's traffic counting as tests use it: backends wrapped in MeteredBackend, calls
 * counted by an IsolateMeter, and its deltas added up as the shared ops record adds them
 * (worker/ops/counters.ts); `snapshot()` answers per backend and bucket (trafficByBucket), and
 * `source` also the upkeep jobs' part (trafficByJob) of what ran inside `job`, as the gateway
 * runs the mover and the re-stripe.
 */
import { MeteredBackend, type TrafficCounts, type UpkeepJob } from '../../backends/metered.ts';
import type { Backend } from '../../backends/types.ts';
import { addCounters, emptyCounters, trafficByBucket, trafficByJob } from '../../worker/ops/counters.ts';
import { IsolateMeter } from '../../worker/ops/meter.ts';
import type { TrafficSource } from '../../worker/upkeep/cost.ts';

export class TrafficMeter {
  readonly since = new Date();
  private readonly meter = new IsolateMeter();
  private readonly totals = emptyCounters();

  wrap(backend: Backend): Backend {
    return new MeteredBackend(backend, (r) => this.meter.backendCall(r));
  }

  /** Runs `fn` as the gateway runs an upkeep job: its calls also counted under `name`. */
  job<T>(name: UpkeepJob, fn: () => Promise<T>): Promise<T> {
    return this.meter.job(name, fn);
  }

  snapshot(): TrafficCounts[] {
    const delta = this.meter.take();
    if (delta) addCounters(this.totals, delta);
    return trafficByBucket(this.totals);
  }

  /** What the admin `costs` route reads. */
  readonly source: TrafficSource = async () => ({ since: this.since, counts: this.snapshot(), jobs: trafficByJob(this.totals) });
}
