/**
 * `shardgate cost`: what a workload costs per month on chosen providers under replicate-3, 4+2,
 * 8+3 and 10+4 (or the schemes given), with how many providers may fail; a table on stdout (or
 * JSON) and an SVG chart. The model is cli/cost/model.ts; prices are worker/config/price-list.ts's.
 * With --transition: keeping the bucket on one class against a lifecycle that moves it to another
 * after N days (cli/cost/lifecycle.ts).
 */
import { writeFileSync } from 'node:fs';
import { PRICES_AS_OF } from '../../worker/config/price-list.ts';
import { ALIASES, DEFAULTS, parseCostArgs } from '../cost/args.ts';
import { compareTransition, transitionTable, type TransitionComparison } from '../cost/lifecycle.ts';
import { costOf } from '../cost/model.ts';
import { costChartSvg } from '../cost/svg.ts';
import { costTable } from '../cost/table.ts';
import type { Command } from '../command.ts';

export const name = 'cost';
export const summary = 'compare what replicate-3, 4+2, 8+3, 10+4 cost per month on chosen providers';
export const help = `usage: shardgate cost [--providers LIST] [--stored GB] [--read GB] [--objects N]
                      [--puts N] [--gets N] [--policies LIST] [--svg FILE | --no-svg] [--json]
       shardgate cost --transition SCHEME --after DAYS [--cold-providers LIST] [--months N]
                      [--policies SCHEME] [workload and provider options] [--json]

  --providers  comma-separated, one failure domain each (default ${DEFAULTS.providers}):
               ${Object.entries(ALIASES)
                 .map(([a, p]) => `${a} (${p})`)
                 .join(', ')},
               wasabi, any preset of worker/config/price-list.ts by name, or
               name=STORAGE:EGRESS:PUT:GET in dollars per GB-month, per GB, per 1000 PUTs, per 1000 GETs
  --stored     GB stored (default ${DEFAULTS.storedGB})
  --read       GB read per month through the gateway (default ${DEFAULTS.readGBPerMonth})
  --objects    objects stored (default ${DEFAULTS.objects}); with --read, the GETs per month
  --puts       object writes per month (default ${DEFAULTS.putsPerMonth})
  --gets       object reads per month (default: the read volume in objects of the average size)
  --policies   schemes to compare (default replicate-3,4+2,8+3,10+4)
  --svg        where the chart goes (default ${DEFAULTS.svg}); --no-svg for none
  --json       the figures as JSON instead of the table

A lifecycle rule that moves the bucket to another storage class, against keeping it (no chart):
  --transition the cold class's scheme (12+4, replicate-2, ...): what a storage class maps to
  --after      days before the rule moves the data
  --cold-providers  the cold class's providers (default: --providers)
  --months     the horizon compared (default ${DEFAULTS.months})
  --policies   with --transition: the hot class's one scheme (default ${DEFAULTS.hotScheme})

Prices are list prices as of ${PRICES_AS_OF} (worker/config/price-list.ts says where each comes from).`;

export async function run(argv: string[], out: (line: string) => void = console.log): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) return (out(help), 0);
  let args;
  try {
    args = parseCostArgs(argv);
  } catch (err) {
    out(`shardgate cost: ${(err as Error).message}\n\n${help}`);
    return 2;
  }
  if (args.transition) {
    let c: TransitionComparison;
    try {
      c = compareTransition(args.transition, args.workload);
    } catch (err) {
      out(`shardgate cost: ${(err as Error).message}`);
      return 2;
    }
    out(args.json ? JSON.stringify({ pricesAsOf: PRICES_AS_OF, workload: args.workload, ...c }, null, 2) : transitionTable(c, args.workload, PRICES_AS_OF));
    return 0;
  }
  const rows = args.schemes.map((s) => costOf(args.providers, s, args.workload));
  if (args.json) out(JSON.stringify({ pricesAsOf: PRICES_AS_OF, workload: args.workload, providers: args.providers, rows }, null, 2));
  else out(costTable(rows, args.providers, args.workload, PRICES_AS_OF));
  if (args.svg) {
    const title = `${args.workload.storedGB} GB stored, ${args.workload.readGBPerMonth} GB read/month on ${args.providers.map((p) => p.name).join(', ')}`;
    writeFileSync(args.svg, costChartSvg(rows, title, PRICES_AS_OF));
    if (!args.json) out(`\nchart: ${args.svg}`);
  }
  return 0;
}

export const command: Command = { name, summary, help, run: (argv) => run(argv) };
