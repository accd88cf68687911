/** Small formatting helpers for the commands' human output. */

export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return '-';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = n,
    u = 0;
  while (Math.abs(v) >= 1024 && u < units.length - 1) (v /= 1024), u++;
  return `${u === 0 ? v : v.toFixed(1)} ${units[u]}`;
}

export function ago(at: number | null | undefined, now = Date.now()): string {
  if (at === null || at === undefined) return 'never';
  const s = Math.max(0, Math.round((now - at) / 1000));
  if (s < 120) return `${s} s ago`;
  if (s < 7200) return `${Math.round(s / 60)} min ago`;
  if (s < 172800) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} days ago`;
}

/** A length of time in seconds, as "45 s", "12 min", "5 h", "3 days". */
export function duration(s: number): string {
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} days`;
}

export function percent(r: number | null | undefined): string {
  return r === null || r === undefined ? '-' : `${(r * 100).toFixed(r < 0.1 && r > 0 ? 1 : 0)}%`;
}

/** Rows of cells as aligned columns (the first row is the header). */
export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')).join('\n');
}

export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value, null, 2) + '\n');
}
