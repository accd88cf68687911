/**
 * `GET /_shardgate/health` (issue 37): a small answer a load balancer can act on by its HTTP
 * status alone, without a signature, a catalog read or more than one probe per backend every
 * `probeEveryMs` per isolate (the answer is this isolate's knowledge: engine/reachability.ts,
 * fed by every backend call and by these probes).
 * - 200 `ok`: every backend reachable.
 * - 200 `degraded`: some backend down or in maintenance, yet the default policy's writes reach
 *   their quorum and its reads k: requests are served.
 * - 503 `unavailable`: the default policy's writes (or reads) cannot succeed from here: fewer
 *   backends reachable than its write quorum (or than k). Send traffic elsewhere.
 * The body names no backend or bucket (anyone may ask): counts and per-policy booleans only.
 */
import type { Backend } from '../../backends/types.ts';
import type { CheckedPolicy } from './checks.ts';
import type { IsolateMeter } from './meter.ts';
import { probeBackends } from './probe.ts';

/** One probe of every backend per isolate per this long at most, however often the balancer asks. */
export const LB_PROBE_EVERY_MS = 15_000;

export interface LbHealthBody {
  status: 'ok' | 'degraded' | 'unavailable';
  backends: number;
  reachable: number;
  maintenance: number;
  /** Per policy: can a write reach its quorum, can a read reach k, from what this isolate knows. */
  policies: Record<string, { writes: boolean; reads: boolean }>;
}

export interface LbHealthDeps {
  policies: Readonly<Record<string, CheckedPolicy>>;
  defaultPolicy: string;
  /** The backends new shards go to (the metered ones: probes count as traffic and feed reachability). */
  backends: Backend[];
  /** Which backends are in maintenance. */
  maintenance: ReadonlySet<string>;
  /** `failing`: the latest call or probe failed (kept until one succeeds, unlike the engine's short window for a refusal). */
  reachability: { failing(backendId: string): boolean };
  meter: IsolateMeter;
  probeEveryMs?: number;
  now?: () => number;
}

export class LoadBalancerHealth {
  private lastProbe = -Infinity;
  private probing = false;

  constructor(private readonly deps: LbHealthDeps) {}

  async check(): Promise<{ code: 200 | 503; body: LbHealthBody }> {
    const now = (this.deps.now ?? Date.now)();
    // Only the request that starts a probe waits for it: Workers cancel a request waiting on
    // another request's I/O with nothing of its own in flight (app/catalog-loss-gate.ts). One
    // asking meanwhile is answered from what the isolate knows.
    if (!this.probing && now - this.lastProbe >= (this.deps.probeEveryMs ?? LB_PROBE_EVERY_MS)) {
      this.lastProbe = now;
      this.probing = true;
      try {
        await probeBackends(
          this.deps.backends.filter((b) => !this.deps.maintenance.has(b.id)),
          this.deps.meter,
        );
      } finally {
        this.probing = false;
      }
    }
    return this.answer();
  }

  /** The answer from what the isolate knows now. */
  answer(): { code: 200 | 503; body: LbHealthBody } {
    const { backends, maintenance, reachability } = this.deps;
    const reachable = backends.filter((b) => !reachability.failing(b.id)).length;
    const policies = Object.fromEntries(
      Object.entries(this.deps.policies).map(([name, p]) => [name, { writes: reachable >= (p.writeQuorum ?? p.k), reads: reachable >= p.k }]),
    );
    const main = policies[this.deps.defaultPolicy];
    const status = main && (!main.writes || !main.reads) ? 'unavailable' : reachable < backends.length ? 'degraded' : 'ok';
    return { code: status === 'unavailable' ? 503 : 200, body: { status, backends: backends.length, reachable, maintenance: maintenance.size, policies } };
  }
}
