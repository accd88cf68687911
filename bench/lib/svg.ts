/**
 * A plain SVG chart (no library): one panel per (setup, metric), grouped bars per object size,
 * one bar per policy, each panel on its own logarithmic scale (figures span 1 to 3000) with the
 * value printed over each bar.
 */

export interface Panel {
  title: string;
  unit: string;
  groups: string[]; // x-axis groups (object sizes)
  series: { name: string; values: (number | null)[] }[];
}

const COLORS: Record<string, string> = {
  'ec-4+2': '#1f77b4',
  'ec-8+3': '#2ca02c',
  'replicate-3': '#d62728',
  direct: '#7f7f7f',
};

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function fmt(v: number): string {
  return v >= 10 ? v.toFixed(0) : v >= 1 ? v.toFixed(1) : v.toFixed(2);
}

function panel(p: Panel, x0: number, y0: number, w: number, h: number): string {
  const out: string[] = [];
  const left = 44,
    top = 26,
    bottom = 30;
  const pw = w - left - 8,
    ph = h - top - bottom;
  const all = p.series.flatMap((s) => s.values).filter((v): v is number => v !== null && Number.isFinite(v) && v > 0);
  // Decades from just below the smallest value to just above the largest.
  const lo = Math.floor(Math.log10(Math.min(...all, 1) * 0.5)),
    hi = Math.max(lo + 1, Math.ceil(Math.log10(Math.max(...all, 1))));
  const yOf = (v: number) => top + ph - (ph * (Math.log10(Math.max(v, 10 ** lo)) - lo)) / (hi - lo);
  out.push(`<g transform="translate(${x0},${y0})">`);
  out.push(`<text x="${w / 2}" y="16" text-anchor="middle" font-size="13" font-weight="bold">${esc(p.title)}</text>`);
  for (let d = lo; d <= hi; d++) {
    for (const m of d < hi ? [1, 2, 5] : [1]) {
      const v = m * 10 ** d,
        y = yOf(v);
      out.push(`<line x1="${left}" x2="${left + pw}" y1="${y.toFixed(1)}" y2="${y.toFixed(1)}" stroke="${m === 1 ? '#ccc' : '#eee'}"/>`);
      out.push(`<text x="${left - 4}" y="${(y + 4).toFixed(1)}" text-anchor="end" font-size="10" fill="#555">${fmt(v)}</text>`);
    }
  }
  const gw = pw / p.groups.length;
  const bw = (gw * 0.8) / p.series.length;
  p.groups.forEach((g, gi) => {
    const gx = left + gi * gw + gw * 0.1;
    p.series.forEach((s, si) => {
      const v = s.values[gi];
      if (v === null || v === undefined || !Number.isFinite(v) || v <= 0) return;
      const y = yOf(v),
        bh = top + ph - y;
      const x = gx + si * bw;
      out.push(
        `<rect x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${(bw - 1).toFixed(1)}" height="${bh.toFixed(1)}" fill="${COLORS[s.name] ?? '#999'}"><title>${esc(`${s.name} ${g}: ${fmt(v)} ${p.unit}`)}</title></rect>`,
      );
      out.push(`<text x="${(x + bw / 2).toFixed(1)}" y="${(y - 2).toFixed(1)}" text-anchor="middle" font-size="8" fill="#333">${fmt(v)}</text>`);
    });
    out.push(`<text x="${(left + gi * gw + gw / 2).toFixed(1)}" y="${top + ph + 16}" text-anchor="middle" font-size="11">${esc(g)}</text>`);
  });
  out.push(`<line x1="${left}" x2="${left + pw}" y1="${top + ph}" y2="${top + ph}" stroke="#333"/>`);
  out.push('</g>');
  return out.join('\n');
}

/** Panels laid out `columns` per row, with a legend and a caption. */
export function chart(panels: Panel[], columns: number, caption: string): string {
  const pw = 340,
    ph = 220;
  const rows = Math.ceil(panels.length / columns);
  const names = [...new Set(panels.flatMap((p) => p.series.map((s) => s.name)))];
  const width = columns * pw + 20,
    height = rows * ph + 70;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif">`,
    `<rect width="100%" height="100%" fill="white"/>`,
  ];
  panels.forEach((p, i) => parts.push(panel(p, 10 + (i % columns) * pw, 10 + Math.floor(i / columns) * ph, pw, ph)));
  const ly = rows * ph + 24;
  names.forEach((n, i) => {
    parts.push(`<rect x="${20 + i * 130}" y="${ly - 10}" width="12" height="12" fill="${COLORS[n] ?? '#999'}"/>`);
    parts.push(`<text x="${36 + i * 130}" y="${ly}" font-size="12">${esc(n)}</text>`);
  });
  parts.push(`<text x="20" y="${ly + 24}" font-size="10" fill="#555">${esc(caption)}</text>`);
  parts.push('</svg>');
  return parts.join('\n') + '\n';
}
