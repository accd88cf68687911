/**
 * `shardgate cost` (cli/commands/cost.ts over cli/cost/*): known answers worked out by hand from
 * the preset prices (R2 $0.015/GB-month, no egress, $0.36/M GETs; AWS $0.023, $0.09/GB, $0.40/M
 * GETs, $5/M PUTs; B2 $0.006, $0.01/GB, $0.40/M GETs, free PUTs), the schemes the providers
 * cannot hold, the average over where an object's extra shards land, the table, the JSON, the
 * chart, and argument errors.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { run } from '../../cli/commands/cost.ts';
import { parseCostArgs } from '../../cli/cost/args.ts';
import { costOf, parseScheme, STANDARD_SCHEMES, type CostRow } from '../../cli/cost/model.ts';
import { costChartSvg } from '../../cli/cost/svg.ts';
import { PRICES_AS_OF } from '../../worker/config/price-list.ts';

const dir = mkdtempSync(join(tmpdir(), 'shardgate-cost-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function rows(argv: string[]): CostRow[] {
  const a = parseCostArgs([...argv, '--no-svg']);
  return a.schemes.map((s) => costOf(a.providers, s, a.workload));
}

const close = (got: number, want: number) => expect(got).toBeCloseTo(want, 9);

describe('shardgate cost: known answers', () => {
  it('r2, aws, b2; 1000 GB stored in 1000 objects, 100 GB read: replicate-3 and 4+2 fit, 8+3 and 10+4 do not', () => {
    const [rep3, ec42, ec83, ec104] = rows(['--providers', 'r2,aws,b2', '--stored', '1000', '--read', '100', '--objects', '1000']);
    // replicate-3: a full copy on each: 1000 x (0.015 + 0.023 + 0.006) = $44; reads from R2 (no
    // egress): 100 GETs x $0.36/M.
    expect(rep3).toMatchObject({ feasible: true, storedGB: 3000, survives: 2, shardsPerProvider: [1, 1, 1] });
    close(rep3!.storage, 44);
    close(rep3!.egress, 0);
    close(rep3!.requests, 0.000036);
    close(rep3!.total, 44.000036);
    // 4+2: two shards on each, 500 GB each: $22; reads take R2's 2 shards and B2's 2: 100 GB / 4
    // x 2 x $0.01 = $0.50; 100 GETs x (2 x 0.00036 + 2 x 0.0004) / 1000.
    expect(ec42).toMatchObject({ feasible: true, storedGB: 1500, survives: 1, shardsPerProvider: [2, 2, 2] });
    close(ec42!.storage, 22);
    close(ec42!.egress, 0.5);
    close(ec42!.requests, 0.000152);
    close(ec42!.total, 22.500152);
    expect(ec42!.providers.map((p) => p.name)).toEqual(['r2', 'aws', 'b2']);
    close(ec42!.providers[1]!.egress, 0);
    // 8+3 on 3 providers puts 4 shards on one (m = 3); 10+4 puts 5 (m = 4).
    expect(ec83).toMatchObject({ feasible: false, reason: 'needs 4 providers (at most 3 of its 11 shards on one)', shardsPerProvider: [4, 4, 3] });
    expect(ec104).toMatchObject({ feasible: false, reason: 'needs 4 providers (at most 4 of its 14 shards on one)' });
  });

  it('PUTs: each object write is k+m PUT-class requests, by share', () => {
    const [ec42] = rows(['--providers', 'r2,aws,b2', '--stored', '0', '--read', '0', '--objects', '0', '--puts', '1000', '--policies', '4+2']);
    // 1000 x 2 x ($4.50 + $5.00 + $0) per million.
    close(ec42!.requests, 0.019);
    close(ec42!.total, 0.019);
  });

  it('replicate-3 over six providers: reads average over which three hold an object', () => {
    // One R2 and five AWS: an object's 3 copies include R2 in 10 of the 20 choices of 3 among 6;
    // the others read from AWS: 100 GB x $0.09 x 10/20 = $4.50. Storage: half a copy each:
    // 1000 x 0.5 x (0.015 + 5 x 0.023) = $65. GETs (100): half at R2's price, half at AWS's.
    const [rep3] = rows(['--providers', 'r2,aws,aws,aws,aws,aws', '--stored', '1000', '--read', '100', '--objects', '1000', '--policies', 'replicate-3']);
    expect(rep3).toMatchObject({ feasible: true, shardsPerProvider: [1, 1, 1], survives: 2 });
    close(rep3!.storage, 65);
    close(rep3!.egress, 4.5);
    close(rep3!.requests, (100 * (0.5 * 0.00036 + 0.5 * 0.0004)) / 1000);
  });

  it('a provider of your own, and a scheme that loses durability to its spread', () => {
    // 10+4 over 6: three shards on two providers, two on four. Losing the two fullest costs 6 > 4.
    const [ec104] = rows([
      '--providers',
      'dc1=0.004:0:0:0,dc2=0.004:0:0:0,dc3=0.004:0:0:0,dc4=0.004:0:0:0,dc5=0.004:0:0:0,dc6=0.004:0:0:0',
      '--stored',
      '1000',
      '--policies',
      '10+4',
    ]);
    expect(ec104).toMatchObject({ feasible: true, shardsPerProvider: [3, 3, 2, 2, 2, 2], survives: 1, storedGB: 1400 });
    close(ec104!.storage, 1400 * 0.004);
    close(ec104!.egress, 0);
  });

  it('the standard comparison is replicate-3, 4+2, 8+3, 10+4; schemes parse as k+m or replicate-N', () => {
    expect(STANDARD_SCHEMES.map((s) => `${s.name}=${s.k}+${s.m}`)).toEqual(['replicate-3=1+2', '4+2=4+2', '8+3=8+3', '10+4=10+4']);
    expect(parseScheme('rep2')).toEqual({ name: 'replicate-2', k: 1, m: 1 });
    expect(parseScheme('6+3')).toEqual({ name: '6+3', k: 6, m: 3 });
    expect(parseScheme('0+3')).toBeNull();
    expect(parseScheme('4-2')).toBeNull();
  });

  it('GETs default to the read volume in objects of the average size', () => {
    expect(parseCostArgs(['--stored', '1000', '--read', '250', '--objects', '4000']).workload.getsPerMonth).toBe(1000);
    expect(parseCostArgs(['--read', '250', '--gets', '7']).workload.getsPerMonth).toBe(7);
  });
});

describe('shardgate cost: the command', () => {
  it('prints the table and writes the chart', async () => {
    const lines: string[] = [];
    const svg = join(dir, 'chart.svg');
    expect(await run(['--providers', 'r2,aws,b2', '--stored', '1000', '--read', '100', '--objects', '1000', '--svg', svg], (l) => lines.push(l))).toBe(0);
    const text = lines.join('\n');
    expect(text).toMatch(/^replicate-3 +1\/1\/1 +3000 +\$44\.00 +\$0 +\$0\.000036 +\$44\.00 +2 of 3 providers down$/m);
    expect(text).toMatch(/^4\+2 +2\/2\/2 +1500 +\$22\.00 +\$0\.50 +\$0\.00015 +\$22\.50 +1 of 3 providers down$/m);
    expect(text).toMatch(/^8\+3 .*not placeable: needs 4 providers/m);
    expect(text).toContain(`chart: ${svg}`);
    const chart = readFileSync(svg, 'utf8');
    expect(chart).toContain('$44.00/month');
    expect(chart).toContain('$22.50/month');
    expect(chart.match(/not placeable/g)).toHaveLength(2);
    expect(chart).toContain(`List prices as of ${PRICES_AS_OF} (worker/config/price-list.ts)`);
    expectWellFormed(chart);
  });

  it('--json gives the figures; errors say what is expected', async () => {
    const lines: string[] = [];
    expect(await run(['--providers', 'r2,b2', '--policies', 'rep2', '--no-svg', '--json'], (l) => lines.push(l))).toBe(0);
    const json = JSON.parse(lines.join('\n'));
    expect(json.rows[0]).toMatchObject({ feasible: true, survives: 1, scheme: { name: 'replicate-2' } });
    expect(json.pricesAsOf).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    for (const [argv, message] of [
      [['--providers', 'ibm'], "unknown provider 'ibm'"],
      [['--stored', 'lots'], "--stored (GB stored) must be a number >= 0, not 'lots'"],
      [['--policies', '4-2'], "'4-2' is not k+m"],
      [['--frobnicate'], "unknown argument '--frobnicate'"],
    ] as const) {
      const out: string[] = [];
      expect(await run([...argv, '--no-svg'], (l) => out.push(l))).toBe(2);
      expect(out.join('\n')).toContain(message);
    }
  });

  it('the chart of schemes that all fit: one bar segment per cost, tallest for the dearest', () => {
    const a = parseCostArgs(['--providers', 'r2,aws,b2,wasabi,gcs,r2', '--no-svg']);
    const svg = costChartSvg(
      a.schemes.map((s) => costOf(a.providers, s, a.workload)),
      'six & <more>',
      PRICES_AS_OF,
    );
    expectWellFormed(svg);
    expect(svg).toContain('<title>six &amp; &lt;more&gt;</title>');
    expect(svg.match(/<rect x="\d+" y="[\d.]+" width="80"/g)!.length).toBeGreaterThanOrEqual(8); // storage + egress (+ requests) for 4 schemes
  });
});

/** Every tag closed in order (the chart is generated, so a simple stack check is enough). */
function expectWellFormed(xml: string): void {
  const stack: string[] = [];
  for (const m of xml.matchAll(/<(\/?)([a-zA-Z]+)[^>]*?(\/?)>/g)) {
    if (m[3]) continue;
    if (m[1]) expect(stack.pop(), `closing ${m[2]}`).toBe(m[2]);
    else stack.push(m[2]!);
  }
  expect(stack).toEqual([]);
}
