/**
 * `GET /_shardgate/health` for a load balancer (issue 37): the HTTP status says whether this
 * gateway can serve the default policy (200 ok / degraded, 503 unavailable), from the isolate's
 * knowledge of its backends, refreshed by at most one probe per backend per interval (a driven
 * clock here), without a signature and without naming any backend.
 */
import { describe, expect, it } from 'vitest';
import { FaultyBackend } from '../../backends/faulty.ts';
import { MemoryBackend } from '../../backends/memory.ts';
import { MeteredBackend } from '../../backends/metered.ts';
import { createOperator } from '../../worker/app/operator.ts';
import { BackendReachability } from '../../worker/engine/reachability.ts';
import { LoadBalancerHealth } from '../../worker/ops/lb-health.ts';
import { IsolateMeter } from '../../worker/ops/meter.ts';
import type { OpsService } from '../../worker/ops/service.ts';

function setup(maintenance: string[] = []) {
  let clock = 1_000_000;
  const faulty = Array.from({ length: 6 }, (_, i) => new FaultyBackend(new MemoryBackend({ id: `b${i}`, domain: `z${i}` })));
  const reachability = new BackendReachability(new Set(maintenance), () => clock);
  const meter = new IsolateMeter();
  const backends = faulty.map(
    (f) =>
      new MeteredBackend(f, (r) => {
        meter.backendCall(r);
        if (r.outcome === 'Unavailable' || r.outcome === 'Timeout') reachability.report(r.backend, false, r.outcome === 'Timeout');
        else if (r.outcome !== 'Aborted') reachability.report(r.backend, true);
      }),
  );
  const health = new LoadBalancerHealth({
    policies: { ec: { codec: 'rs', k: 4, m: 2, writeQuorum: 5 }, wide: { codec: 'rs', k: 2, m: 1 } },
    defaultPolicy: 'ec',
    backends,
    maintenance: reachability.maintenance,
    reachability,
    meter,
    probeEveryMs: 15_000,
    now: () => clock,
  });
  const routes = createOperator({
    authenticate: async () => {
      throw new Error('not asked');
    },
    ops: {} as OpsService,
    open: false,
    health,
  });
  const ask = async () => {
    const r = await routes.request('/health');
    return { code: r.status, body: (await r.json()) as { status: string; reachable: number; policies: Record<string, { writes: boolean }> } };
  };
  const probes = () => faulty.reduce((n, f) => n + f.calls.filter((c) => c.op === 'head').length, 0);
  return { faulty, ask, probes, advance: (ms: number) => void (clock += ms) };
}

describe('the load balancer health route', () => {
  it('200 ok, 503 when the default policy cannot write, 200 degraded with one down; one probe per backend per interval', async () => {
    const s = setup();
    expect(await s.ask()).toMatchObject({ code: 200, body: { status: 'ok', reachable: 6 } });
    expect(s.probes()).toBe(6);

    s.faulty[0]!.goOffline();
    s.faulty[1]!.goOffline();
    expect(await s.ask()).toMatchObject({ code: 200, body: { status: 'ok' } }); // within the interval: no new probe
    expect(s.probes()).toBe(6);
    s.advance(15_000);
    const down = await s.ask();
    expect(down).toMatchObject({
      code: 503,
      body: { status: 'unavailable', reachable: 4, policies: { ec: { writes: false, reads: true }, wide: { writes: true } } },
    });
    expect(JSON.stringify(down.body)).not.toMatch(/b0|b1/); // names no backend

    s.faulty[0]!.goOnline();
    s.advance(15_000);
    expect(await s.ask()).toMatchObject({ code: 200, body: { status: 'degraded', reachable: 5 } });
    expect(s.probes()).toBe(18);
  });

  it('a backend in maintenance: degraded, never probed', async () => {
    const s = setup(['b5']);
    expect(await s.ask()).toMatchObject({ code: 200, body: { status: 'degraded', reachable: 5, maintenance: 1 } });
    expect(s.faulty[5]!.calls).toEqual([]);
    expect(s.probes()).toBe(5);
  });
});
