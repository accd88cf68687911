/**
 * `shardgate cost --transition` (issue 44): keeping a bucket on one class against a lifecycle
 * that moves it to another after N days, with known answers worked out by hand from providers of
 * our own prices (name=storage:egress:put:get), then the table, the JSON and argument errors.
 */
import { describe, expect, it } from 'vitest';
import { run } from '../../cli/commands/cost.ts';
import { parseCostArgs } from '../../cli/cost/args.ts';
import { compareTransition } from '../../cli/cost/lifecycle.ts';

const close = (got: number, want: number) => expect(got).toBeCloseTo(want, 9);
/** Three hot providers at $0.02/GB-month, everything else free; five cold ones at $0.01, $0.09/GB egress, $10 per 1000 PUTs. */
const HOT = 'h1=0.02:0:0:0,h2=0.02:0:0:0,h3=0.02:0:0:0';
const COLD = 'c1=0.01:0.09:10:0,c2=0.01:0.09:10:0,c3=0.01:0.09:10:0,c4=0.01:0.09:10:0,c5=0.01:0.09:10:0';

function compare(argv: string[]) {
  const a = parseCostArgs([...argv, '--no-svg']);
  return compareTransition(a.transition!, a.workload);
}

describe('shardgate cost --transition: known answers', () => {
  it('4+2 on three providers, moved to 4+1 on five after 30 days, over 12 months', () => {
    const c = compare([
      '--providers',
      HOT,
      '--transition',
      '4+1',
      '--cold-providers',
      COLD,
      '--after',
      '30',
      '--stored',
      '1000',
      '--objects',
      '1000',
      '--read',
      '0',
      '--gets',
      '0',
    ]);
    // Hot: 1000 GB x 6/4 = 1500 GB at $0.02 = $30 a month. Cold: 1000 x 5/4 = 1250 GB at $0.01 = $12.50.
    close(c.hot.perMonth.total, 30);
    close(c.cold.perMonth.total, 12.5);
    // The move: reading the hot shards is free; writing 1000 objects x 5 shards at $10/1000 = $50.
    close(c.lifecycle.move.total, 50);
    close(c.lifecycle.move.egress, 0);
    // 360 days: 30 on hot ($30), the move ($50), 330 on cold ($137.50) = $217.50 against 12 x $30.
    close(c.lifecycle.beforeMove, 30);
    close(c.lifecycle.afterMove, 137.5);
    close(c.lifecycle.total, 217.5);
    close(c.keep.total, 360);
    close(c.saving, 142.5);
    // $17.50 a month less = $0.5833 a day: the $50 move is made back 86 days after day 30.
    expect(c.breakEvenDay).toBe(116);
  });

  it('the move pays the hot class egress; reads go on from the cold class; moving later than the horizon is keeping', () => {
    const hotWithEgress = 'h1=0.02:0.09:0:0,h2=0.02:0.09:0:0,h3=0.02:0.09:0:0';
    const base = ['--providers', hotWithEgress, '--transition', '4+1', '--cold-providers', COLD, '--stored', '1000', '--objects', '1000', '--gets', '0'];
    const c = compare([...base, '--after', '30', '--read', '100']);
    // Hot reads: 100 GB a month from 4 shards at $0.09 = $9; cold reads the same: $9.
    close(c.hot.perMonth.total, 39);
    close(c.cold.perMonth.total, 21.5);
    // The move reads the 1000 GB once ($90 egress) and writes 5000 shards ($50).
    close(c.lifecycle.move.egress, 90);
    close(c.lifecycle.move.requests, 50);
    close(c.lifecycle.total, 39 + 140 + 21.5 * 11);
    expect(c.breakEvenDay).toBe(30 + Math.ceil(140 / (17.5 / 30)));
    const never = compare([...base, '--after', '400', '--read', '0']);
    close(never.lifecycle.move.total, 0);
    close(never.lifecycle.total, never.keep.total);
    // A cold class dearer than the hot one never pays off.
    const dear = compare([
      '--providers',
      HOT,
      '--transition',
      'replicate-3',
      '--after',
      '30',
      '--stored',
      '1000',
      '--objects',
      '1000',
      '--read',
      '0',
      '--gets',
      '0',
    ]);
    expect(dear.breakEvenDay).toBeNull();
    expect(dear.saving).toBeLessThan(0);
  });

  it('prints the comparison, or JSON; refuses what it cannot compare', async () => {
    const lines: string[] = [];
    const argv = [
      '--providers',
      HOT,
      '--transition',
      '4+1',
      '--cold-providers',
      COLD,
      '--after',
      '30',
      '--stored',
      '1000',
      '--objects',
      '1000',
      '--read',
      '0',
      '--gets',
      '0',
    ];
    expect(await run([...argv, '--no-svg'], (l) => lines.push(l))).toBe(0);
    const text = lines.join('\n');
    expect(text).toContain('hot class:  4+2 on h1, h2, h3: $30.00/month');
    expect(text).toContain('keep on 4+2: $360.00');
    expect(text).toContain('move to 4+1 after 30 day(s): $217.50');
    expect(text).toContain('the lifecycle saves $142.50');
    expect(text).toContain('from day 116');
    const json: string[] = [];
    expect(await run([...argv, '--json'], (l) => json.push(l))).toBe(0);
    expect(JSON.parse(json.join('\n'))).toMatchObject({ afterDays: 30, months: 12, breakEvenDay: 116, hot: { scheme: '4+2' }, cold: { scheme: '4+1' } });
    const error = async (args: string[]) => {
      const out: string[] = [];
      expect(await run([...args, '--no-svg'], (l) => out.push(l))).toBe(2);
      return out[0]!;
    };
    expect(await error(['--after', '30'])).toContain('--after goes with --transition SCHEME');
    expect(await error(['--transition', '4+1'])).toContain('needs --after DAYS');
    expect(await error(['--transition', 'cheap', '--after', '3'])).toContain("'cheap' is not k+m");
    expect(await error(['--transition', '4+1', '--after', '3', '--policies', '4+2,8+3'])).toContain('--policies names one scheme');
    expect(await error(['--transition', '12+4', '--after', '3', '--providers', 'r2,aws,b2'])).toContain(
      'the cold class (12+4): not placeable: needs 4 providers',
    );
    expect(await error(['--transition', '4+1', '--after', '3', '--months', '0', '--providers', HOT, '--cold-providers', COLD])).toContain('--months');
  });
});
