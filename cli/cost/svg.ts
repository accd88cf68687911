/**
 * The chart of `shardgate cost`: one stacked bar per scheme (storage, egress, requests per month)
 * with its total and how many providers may fail written above it; schemes the providers cannot
 * hold get a note instead of a bar. Plain SVG 1.1, no scripts or external resources.
 */
import type { CostRow } from './model.ts';
import { dollars } from './table.ts';

const PARTS = [
  { key: 'storage', label: 'storage', color: '#4e79a7' },
  { key: 'egress', label: 'egress', color: '#f28e2b' },
  { key: 'requests', label: 'requests', color: '#59a14f' },
] as const;

export function costChartSvg(rows: CostRow[], title: string): string {
  const W = 120 + rows.length * 140, H = 420, top = 70, bottom = 350, left = 70;
  const max = Math.max(1e-9, ...rows.filter((r) => r.feasible).map((r) => r.total));
  const scale = (bottom - top) / max;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<title>${escape(title)}</title>`,
    `<rect width="${W}" height="${H}" fill="#ffffff"/>`,
    `<text x="${W / 2}" y="24" text-anchor="middle" font-size="15" font-weight="bold">${escape(title)}</text>`,
    `<line x1="${left - 10}" y1="${bottom}" x2="${W - 20}" y2="${bottom}" stroke="#333"/>`,
  ];
  PARTS.forEach((p, i) => {
    out.push(`<rect x="${left + i * 110}" y="38" width="12" height="12" fill="${p.color}"/>`, `<text x="${left + i * 110 + 18}" y="49">${p.label}</text>`);
  });
  rows.forEach((r, i) => {
    const x = left + i * 140, w = 80;
    out.push(`<text x="${x + w / 2}" y="${bottom + 18}" text-anchor="middle" font-weight="bold">${escape(r.scheme.name)}</text>`);
    if (!r.feasible) {
      out.push(`<text x="${x + w / 2}" y="${bottom - 10}" text-anchor="middle" fill="#a00">not placeable</text>`);
      out.push(`<text x="${x + w / 2}" y="${bottom + 34}" text-anchor="middle" fill="#a00" font-size="11">${escape((r.reason ?? '').split(' (')[0]!)}</text>`);
      return;
    }
    let y = bottom;
    for (const p of PARTS) {
      const h = r[p.key] * scale;
      if (h <= 0) continue;
      y -= h;
      out.push(`<rect x="${x}" y="${y.toFixed(2)}" width="${w}" height="${h.toFixed(2)}" fill="${p.color}"><title>${p.label}: ${dollars(r[p.key])}</title></rect>`);
    }
    out.push(`<text x="${x + w / 2}" y="${(y - 6).toFixed(2)}" text-anchor="middle">${dollars(r.total)}/month</text>`);
    out.push(`<text x="${x + w / 2}" y="${bottom + 34}" text-anchor="middle" font-size="11">survives ${r.survives} provider${r.survives === 1 ? '' : 's'} down</text>`);
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}

function escape(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
