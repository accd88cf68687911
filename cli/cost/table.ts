/**
 * The text table of `shardgate cost`: one row per scheme (stored GB, storage, egress, requests,
 * total per month, providers that may fail), then what each provider's share costs under each
 * feasible scheme. Dollars to the cent; smaller amounts to two significant digits, so that a
 * cost is never shown as nothing when it is not.
 */
import type { CostRow, Provider, Workload } from './model.ts';

export function dollars(v: number): string {
  if (v === 0) return '$0';
  if (v >= 0.01) return `$${v.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
  return `$${v.toPrecision(2)}`;
}

export function costTable(rows: CostRow[], providers: Provider[], w: Workload, asOf: string): string {
  const lines: string[] = [];
  lines.push(
    `workload: ${w.storedGB} GB stored in ${w.objects} objects; ${w.readGBPerMonth} GB read per month in ${w.getsPerMonth} GETs; ${w.putsPerMonth} PUTs per month`,
  );
  lines.push(`providers: ${providers.map((p) => p.name).join(', ')} (one failure domain each; prices as of ${asOf}, list prices, no free tiers)`);
  lines.push('');
  const header = ['policy', 'shards/provider', 'stored GB', 'storage', 'egress', 'requests', 'total/month', 'survives'];
  const body = rows.map((r) =>
    r.feasible
      ? [
          r.scheme.name,
          r.shardsPerProvider.join('/'),
          r.storedGB.toFixed(0),
          dollars(r.storage),
          dollars(r.egress),
          dollars(r.requests),
          dollars(r.total),
          `${r.survives} of ${providers.length} providers down`,
        ]
      : [r.scheme.name, r.shardsPerProvider.join('/'), '-', '-', '-', '-', '-', `not placeable: ${r.reason}`],
  );
  lines.push(...grid([header, ...body]));
  const feasible = rows.filter((r) => r.feasible);
  if (feasible.length) {
    lines.push('', 'per provider (storage + egress + requests per month):');
    const per = [
      ['provider', ...feasible.map((r) => r.scheme.name)],
      ...providers.map((p, i) => [
        p.name,
        ...feasible.map((r) => {
          const x = r.providers[i]!;
          return dollars(x.storage + x.egress + x.requests);
        }),
      ]),
    ];
    lines.push(...grid(per));
  }
  return lines.join('\n');
}

function grid(cells: string[][]): string[] {
  const widths = cells[0]!.map((_, c) => Math.max(...cells.map((row) => row[c]!.length)));
  return cells.map((row) =>
    row
      .map((cell, c) => (c === 0 || (c === row.length - 1 && !/^\$/.test(cell)) ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!)))
      .join('  ')
      .trimEnd(),
  );
}
