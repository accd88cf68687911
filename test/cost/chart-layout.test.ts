/**
 * The cost chart as a browser draws it (Chromium measures every caption): no two captions
 * overlap and every one lies inside the picture, for charts whose captions are long (wide costs,
 * schemes that cannot be placed, a long title); the price list's date is printed.
 * It needs('chromium').
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCostArgs } from '../../cli/cost/args.ts';
import { costOf } from '../../cli/cost/model.ts';
import { costChartSvg } from '../../cli/cost/svg.ts';
import { PRICES_AS_OF } from '../../worker/config/price-list.ts';
import { launchChromium, type Chromium } from '../support/chromium.ts';
import { needs } from '../support/prerequisites.ts';

interface Box {
  text: string;
  x: number;
  y: number;
  width: number;
  height: number;
}

function chart(argv: string[], title: string): string {
  const a = parseCostArgs([...argv, '--no-svg']);
  return costChartSvg(
    a.schemes.map((s) => costOf(a.providers, s, a.workload)),
    title,
    PRICES_AS_OF,
  );
}

describe('the cost chart in Chromium', { timeout: 60_000, ...needs('chromium') }, () => {
  let chrome: Chromium;
  beforeAll(async () => {
    chrome = await launchChromium();
  });
  afterAll(async () => chrome?.close());

  /** Every <text>'s box as drawn, and the picture's size. */
  async function layout(svg: string): Promise<{ boxes: Box[]; width: number; height: number }> {
    const page = await chrome.browser.newPage();
    try {
      await page.setContent(`<!doctype html><body style="margin:0">${svg}</body>`);
      type Measured = { getBBox(): { x: number; y: number; width: number; height: number }; textContent: string | null };
      const boxes = await page.$$eval('svg text', (texts) =>
        texts.map((t) => {
          const b = (t as unknown as Measured).getBBox();
          return { text: t.textContent ?? '', x: b.x, y: b.y, width: b.width, height: b.height };
        }),
      );
      const size = await page.$eval('svg', (root) => {
        const { width, height } = (root as unknown as { viewBox: { baseVal: { width: number; height: number } } }).viewBox.baseVal;
        return { width, height }; // an SVGRect does not cross to Node: its numbers do
      });
      return { boxes, width: size.width, height: size.height };
    } finally {
      await page.close();
    }
  }

  /** Boxes closer than 2 px read as one caption: they count as overlapping. */
  const GAP = 2;
  const overlap = (a: Box, b: Box) => a.x < b.x + b.width + GAP && b.x < a.x + a.width + GAP && a.y < b.y + b.height + GAP && b.y < a.y + a.height + GAP;

  for (const [name, argv, title] of [
    [
      'three providers: two schemes not placeable',
      ['--providers', 'r2,aws,b2', '--stored', '1000', '--read', '100'],
      '1000 GB stored, 100 GB read/month on r2, aws, b2',
    ],
    [
      'six providers, large costs, a long title',
      ['--providers', 'r2,aws,b2,wasabi,gcs,r2', '--stored', '9000000', '--read', '4000000', '--policies', 'replicate-3,4+2,8+3,10+4,2+1'],
      '9000000 GB stored, 4000000 GB read/month on r2, aws-s3-standard, b2, wasabi, gcs-standard, r2 and a title that goes on',
    ],
  ] as const) {
    it(`${name}: no caption overlaps another, all inside the picture, the price date printed`, async () => {
      const svg = chart([...argv], title);
      const { boxes, width, height } = await layout(svg);
      expect(boxes.length).toBeGreaterThan(8);
      for (const b of boxes) {
        expect(b.x, b.text).toBeGreaterThanOrEqual(0);
        expect(b.y, b.text).toBeGreaterThanOrEqual(0);
        expect(b.x + b.width, b.text).toBeLessThanOrEqual(width);
        expect(b.y + b.height, b.text).toBeLessThanOrEqual(height);
      }
      const clashes = boxes.flatMap((a, i) =>
        boxes
          .slice(i + 1)
          .filter((b) => overlap(a, b))
          .map((b) => `"${a.text}" / "${b.text}"`),
      );
      expect(clashes).toEqual([]);
      expect(boxes.map((b) => b.text)).toContainEqual(expect.stringContaining(`List prices as of ${PRICES_AS_OF}`));
    });
  }
});
