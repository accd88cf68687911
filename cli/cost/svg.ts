/**
 * The chart of `shardgate cost`: one stacked bar per scheme (storage, egress, requests per month)
 * with its total written above it and, below, the scheme and how many providers may fail; schemes
 * the providers cannot hold get a note instead of a bar. A footer gives the price list's date.
 * Plain SVG 1.1, no scripts or external resources.
 * Layout: every caption is wrapped to the width of its column (text widths are estimated from
 * the font size, generously, since an SVG file cannot measure its text), and the chart grows
 * downwards to hold the longest caption, so no two captions overlap whatever their length.
 */
import type { CostRow } from './model.ts';
import { dollars } from './table.ts';

const PARTS = [
  { key: 'storage', label: 'storage', color: '#4e79a7' },
  { key: 'egress', label: 'egress', color: '#f28e2b' },
  { key: 'requests', label: 'requests', color: '#59a14f' },
] as const;

/** One scheme's column: its bar in the middle, captions wrapped to the column less a gap. */
const COLUMN = 160;
const BAR = 80;
const GAP = 16;
const LEFT = 40;
const PLOT_TOP = 78;
const PLOT_HEIGHT = 280;
const LINE = 1.3; // line height, in font sizes

/** Wide enough for the widest sans-serif glyphs used (digits, capitals, "$", "m", "w") on average. */
const EM_PER_CHAR = 0.62;

export function costChartSvg(rows: CostRow[], title: string, pricesAsOf: string): string {
  const W = Math.max(LEFT * 2 + rows.length * COLUMN, 3 * 110 + LEFT * 2);
  const titleLines = wrap(title, W - 40, 15 * 1.08); // bold
  const titleBottom = 24 + (titleLines.length - 1) * 15 * LINE;
  const legendY = titleBottom + 14;
  // Room above the tallest bar for its total, clear of the legend.
  const top = Math.max(PLOT_TOP, legendY + 40);
  const bottom = top + PLOT_HEIGHT;
  const max = Math.max(1e-9, ...rows.filter((r) => r.feasible).map((r) => r.total));
  const scale = (bottom - top) / max;
  const body: string[] = [];
  let captionsBottom = bottom;
  const text = (x: number, y: number, lines: string[], size: number, attrs = '') => {
    const spans = lines.map((l, i) => `<tspan x="${x}" dy="${i === 0 ? 0 : (size * LINE).toFixed(1)}">${escape(l)}</tspan>`).join('');
    return `<text x="${x}" y="${y.toFixed(2)}" text-anchor="middle" font-size="${size}"${attrs}>${spans}</text>`;
  };
  rows.forEach((r, i) => {
    const mid = LEFT + i * COLUMN + COLUMN / 2;
    const x = mid - BAR / 2;
    const width = COLUMN - GAP;
    // Below the axis: the scheme, then what it survives (or why it cannot be placed), line after line.
    let y = bottom + 18;
    const caption = (lines: string[], size: number, attrs = '') => {
      body.push(text(mid, y, lines, size, attrs));
      y += lines.length * size * LINE + 4;
    };
    caption(wrap(r.scheme.name, width, 12 * 1.08), 12, ' font-weight="bold"');
    if (!r.feasible) {
      body.push(text(mid, bottom - 10, ['not placeable'], 12, ' fill="#a00"'));
      caption(wrap((r.reason ?? '').split(' (')[0]!, width, 11), 11, ' fill="#a00"');
    } else {
      let barTop = bottom;
      for (const p of PARTS) {
        const h = r[p.key] * scale;
        if (h <= 0) continue;
        barTop -= h;
        body.push(
          `<rect x="${x}" y="${barTop.toFixed(2)}" width="${BAR}" height="${h.toFixed(2)}" fill="${p.color}"><title>${p.label}: ${dollars(r[p.key])}</title></rect>`,
        );
      }
      // Above the bar: the total, wrapped upwards so its last line sits just over the bar.
      const total = wrap(`${dollars(r.total)}/month`, width, 12);
      body.push(text(mid, barTop - 6 - (total.length - 1) * 12 * LINE, total, 12));
      caption(wrap(`survives ${r.survives} provider${r.survives === 1 ? '' : 's'} down`, width, 11), 11);
    }
    captionsBottom = Math.max(captionsBottom, y);
  });
  const footer = wrap(`List prices as of ${pricesAsOf} (worker/config/price-list.ts), per month.`, W - 40, 11);
  const footerY = captionsBottom + 14;
  const H = Math.ceil(footerY + footer.length * 11 * LINE + 8);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<title>${escape(title)}</title>`,
    `<rect width="${W}" height="${H}" fill="#ffffff"/>`,
    text(W / 2, 24, titleLines, 15, ' font-weight="bold"'),
    `<line x1="${LEFT - 10}" y1="${bottom}" x2="${W - 20}" y2="${bottom}" stroke="#333"/>`,
  ];
  PARTS.forEach((p, i) => {
    out.push(
      `<rect x="${LEFT + i * 110}" y="${legendY}" width="12" height="12" fill="${p.color}"/>`,
      `<text x="${LEFT + i * 110 + 18}" y="${legendY + 11}">${p.label}</text>`,
    );
  });
  out.push(...body, text(W / 2, footerY, footer, 11, ' fill="#555"'), '</svg>');
  return out.join('\n') + '\n';
}

/**
 * `s` in lines of at most `maxPx` at `fontPx` (estimated), broken at spaces; a word longer than
 * a line is cut.
 */
export function wrap(s: string, maxPx: number, fontPx: number): string[] {
  const perLine = Math.max(1, Math.floor(maxPx / (fontPx * EM_PER_CHAR)));
  const lines: string[] = [];
  let line = '';
  for (let word of s.split(/\s+/).filter(Boolean)) {
    while (word.length > perLine) {
      if (line) lines.push(line);
      line = '';
      lines.push(word.slice(0, perLine));
      word = word.slice(perLine);
    }
    if (!line) {
      line = word;
    } else if (line.length + 1 + word.length <= perLine) {
      line += ` ${word}`;
    } else {
      lines.push(line);
      line = word;
    }
  }
  if (line || lines.length === 0) lines.push(line);
  return lines;
}

function escape(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
