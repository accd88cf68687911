/**
 * Health from quorum (issue 27): named checks with states and what to do. With 4+2 (write quorum
 * 5), one backend down is a warning (writes still reach 5); two down make writes impossible,
 * critical, though reads still work; three down also make reads fail. The checks reach the status
 * document, the metrics (as the official Prometheus client parses them) and `shardgate status`.
 */
import { describe, expect, it } from 'vitest';
import { render } from '../../cli/commands/status.ts';
import type { StatusLike } from '../../cli/gateway-client.ts';
import { FaultyBackend } from '../../backends/faulty.ts';
import { MemoryBackend } from '../../backends/memory.ts';
import { MeteredBackend } from '../../backends/metered.ts';
import { healthChecks, journalCheck } from '../../worker/ops/checks.ts';
import { MemoryOpsRecord } from '../../worker/ops/book.ts';
import { OpsFlusher } from '../../worker/ops/flusher.ts';
import { IsolateMeter } from '../../worker/ops/meter.ts';
import { renderMetrics } from '../../worker/ops/prometheus.ts';
import { OpsService } from '../../worker/ops/service.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { parseMetrics, valueOf } from './helpers.ts';

const EC = { ec: { codec: 'rs', k: 4, m: 2, writeQuorum: 5 } };
const six = (down: number) => Array.from({ length: 6 }, (_, i) => ({ id: `b${i}`, state: i < down ? ('down' as const) : ('up' as const) }));

describe('health checks', () => {
  it('states by how many of 6 backends are down, for 4+2 with write quorum 5', () => {
    const states = (down: number) =>
      Object.fromEntries(healthChecks({ backends: six(down), policies: EC, degradedObjects: 0, repairStuck: 0 }).map((c) => [c.name, c.state]));
    expect(states(0)).toEqual({ 'writes:ec': 'ok', 'reads:ec': 'ok', backends: 'ok', repairs: 'ok', redundancy: 'ok' });
    expect(states(1)).toEqual({ 'writes:ec': 'ok', 'reads:ec': 'ok', backends: 'warning', repairs: 'ok', redundancy: 'ok' });
    // Two down = m: every unit with a shard on both has exactly k left.
    expect(states(2)).toEqual({ 'writes:ec': 'critical', 'reads:ec': 'warning', backends: 'warning', repairs: 'ok', redundancy: 'ok' });
    expect(states(3)).toEqual({ 'writes:ec': 'critical', 'reads:ec': 'critical', backends: 'warning', repairs: 'ok', redundancy: 'ok' });
  });

  it('redundancy from the shards recorded missing: exactly k is reads at risk, below k is data lost', () => {
    const check = (unitsAtRisk: number, unitsLost: number) =>
      healthChecks({ backends: six(0), policies: EC, degradedObjects: 1, repairStuck: 0, unitsAtRisk, unitsLost }).find((c) => c.name === 'redundancy')!;
    expect(check(0, 0).state).toBe('ok');
    expect(check(3, 0)).toMatchObject({ state: 'warning', detail: 'reads at risk: 3 unit(s) have exactly k shards left' });
    expect(check(3, 2)).toMatchObject({ state: 'critical', detail: 'data lost: 2 unit(s) have fewer than k shards; 3 more have exactly k' });
    expect(check(0, 1).action).toMatch(/bring back the backends/);
  });

  it('every check that is not ok says what to do', () => {
    const checks = healthChecks({ backends: six(2), policies: EC, degradedObjects: 3, repairStuck: 1 });
    const writes = checks.find((c) => c.name === 'writes:ec')!;
    expect(writes.detail).toBe('writes of policy ec are impossible: 4 backend(s) reachable, its write quorum is 5');
    expect(writes.action).toMatch(/^bring back backends \(down: b0, b1\): every write of ec is refused until 5 are reachable$/);
    for (const c of checks.filter((x) => x.state !== 'ok')) expect(c.action, c.name).toBeTruthy();
    expect(checks.find((c) => c.name === 'repairs')).toMatchObject({ state: 'warning', action: expect.stringContaining('shardgate repair --list --stuck') });
  });

  it('two of six down: the status is critical with the writes check, in the metrics and in shardgate status', async () => {
    const meter = new IsolateMeter();
    const record = new MemoryOpsRecord();
    const faulty = Array.from({ length: 6 }, (_, i) => new FaultyBackend(new MemoryBackend({ id: `b${i}`, domain: `z${i}` })));
    faulty[0]!.goOffline();
    faulty[1]!.goOffline();
    const backends = faulty.map((b) => new MeteredBackend(b, (r) => meter.backendCall(r)));
    const ops = new OpsService({
      config: {
        backends: faulty.map((b) => ({ id: b.id, domain: b.domain })),
        policies: EC,
        defaultPolicy: 'ec',
        coder: { kernel: 'scalar', crc32: 'js' },
        scrubMode: 'heads',
        deployment: { mode: 'local', warnings: [] },
      },
      catalog: localCatalog(),
      backends,
      meter,
      record,
      flusher: new OpsFlusher(meter, (d) => record.record(d), 5000),
      probeEveryMs: 30_000,
    });
    const { doc, totals } = await ops.status({ signed: false, hours: 1, probe: true }); // the probe finds two down
    expect(doc.health).toBe('critical');
    expect(doc.checks.find((c) => c.name === 'writes:ec')).toMatchObject({ state: 'critical' });
    const samples = await parseMetrics(renderMetrics(doc, totals));
    expect(valueOf(samples, 'shardgate_health_status')).toBe(2);
    expect(valueOf(samples, 'shardgate_health_check', { check: 'writes:ec' })).toBe(2);
    expect(valueOf(samples, 'shardgate_health_check', { check: 'reads:ec' })).toBe(1); // at risk: m down
    expect(valueOf(samples, 'shardgate_units_redundancy', { state: 'lost' })).toBe(0);
    expect(valueOf(samples, 'shardgate_health_check', { check: 'backends' })).toBe(1);
    const text = render(doc as unknown as StatusLike);
    expect(text).toMatch(
      /^CRITICAL writes:ec: writes of policy ec are impossible: 4 backend\(s\) reachable, its write quorum is 5\n  what to do: bring back backends/m,
    );
    expect(text).toMatch(/^WARNING reads:ec: reads of policy ec are at risk: 2 backend\(s\) down/m);
    expect(text).not.toMatch(/^\w+ redundancy/m); // ok checks are not listed
  });
});

describe('the journal check: the recovery point if the catalog were lost now', () => {
  const now = Date.parse('2026-12-02T12:00:00Z');
  const min = 60_000;
  it('ok while changes are stored within minutes, with the recovery point', () => {
    const c = journalCheck(
      [
        { name: 'a', behind: true, storedAt: now - 50_000 },
        { name: 'b', behind: false, storedAt: now - 60 * min },
      ],
      now,
    );
    expect(c).toMatchObject({ name: 'journal', state: 'ok' });
    expect(c.detail).toMatch(/recovery point 50 s/);
  });
  it('a warning past 3 minutes, critical past 15, naming the instances behind', () => {
    expect(
      journalCheck(
        [
          { name: 'a', behind: true, storedAt: now - 4 * min },
          { name: 'b', behind: true, storedAt: now - 30_000 },
        ],
        now,
      ),
    ).toMatchObject({ state: 'warning', detail: expect.stringMatching(/last 4 min .*\(a\)/) });
    expect(journalCheck([{ name: 'a', behind: true, storedAt: now - 20 * min }], now).state).toBe('critical');
  });
  it("the warning's action names the cron that applies: wrangler.toml [triggers] deployed, npm start's timer locally", () => {
    const late = [{ name: 'a', behind: true, storedAt: now - 5 * min }];
    expect(journalCheck(late, now, 'deployed').action).toMatch(/^check that the cron runs \(wrangler\.toml \[triggers\]\)/);
    const local = journalCheck(late, now, 'local').action!;
    expect(local).toMatch(/^check that the local cron runs \(npm start calls the scheduled handler every --cron-seconds/);
    expect(local).not.toContain('[triggers]');
  });
  it('an instance never journaled yet is counted, not judged late', () => {
    const c = journalCheck([{ name: 'new', behind: true, storedAt: null }], now);
    expect(c.state).toBe('ok');
    expect(c.detail).toMatch(/1 catalog instance\(s\) with changes not journaled yet/);
  });
});
