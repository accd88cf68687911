/**
 * Latency histograms with fixed buckets (types.ts LATENCY_BUCKETS_MS), so that counts from any
 * isolate and any minute add up, as Prometheus histograms do. Percentiles are estimated by
 * linear interpolation inside the bucket that holds them (Prometheus' histogram_quantile does the
 * same): within a factor of the bucket width, which is what a health table needs.
 */
import { LATENCY_BUCKETS_MS } from './types.ts';

export function emptyHistogram(): number[] {
  return new Array(LATENCY_BUCKETS_MS.length + 1).fill(0);
}

export function bucketOf(ms: number): number {
  const i = LATENCY_BUCKETS_MS.findIndex((edge) => ms <= edge);
  return i === -1 ? LATENCY_BUCKETS_MS.length : i;
}

export function addHistogram(into: number[], from: readonly number[]): void {
  for (let i = 0; i < from.length; i++) into[i] = (into[i] ?? 0) + (from[i] ?? 0);
}

/** The q-quantile (0 < q <= 1) in ms, or null without observations; past the last edge: that edge. */
export function quantile(hist: readonly number[], q: number): number | null {
  const total = hist.reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  const rank = q * total;
  let seen = 0;
  for (let i = 0; i < hist.length; i++) {
    const n = hist[i] ?? 0;
    if (n > 0 && seen + n >= rank) {
      if (i >= LATENCY_BUCKETS_MS.length) return LATENCY_BUCKETS_MS[LATENCY_BUCKETS_MS.length - 1]!;
      const lo = i === 0 ? 0 : LATENCY_BUCKETS_MS[i - 1]!;
      const hi = LATENCY_BUCKETS_MS[i]!;
      return lo + ((hi - lo) * (rank - seen)) / n;
    }
    seen += n;
  }
  return LATENCY_BUCKETS_MS[LATENCY_BUCKETS_MS.length - 1]!;
}
