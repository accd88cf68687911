/** How sizes, times and errors read on screen. */
export function bytes(n: number): string {
  if (!Number.isFinite(n)) return '';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) (v /= 1024), i++;
  return i === 0 ? `${n} B` : `${v.toFixed(v < 10 ? 2 : 1)} ${units[i]}`;
}

export function when(iso: string): string {
  if (!iso) return '';
  const d = new Date(iso);
  return Number.isNaN(d.getTime())
    ? iso
    : d
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d+Z$/, ' UTC');
}

export function errorText(err: unknown): string {
  if (err && typeof err === 'object' && 'code' in err && 'message' in err) {
    const e = err as { code: string; message: string };
    return `${e.code}: ${e.message}`;
  }
  return err instanceof Error ? err.message : String(err);
}
