/**
 * BackendLatency: how quickly each backend has been answering shard reads, kept by one object per
 * gateway (per isolate: each isolate learns from its own reads). An exponentially weighted mean
 * of the time to a response, a failure counted as a very slow answer. A read that must decode
 * takes its extra shards from the backends answering fastest; data shards always come first
 * because they need no decoding.
 *
 * A backend with no sample ranks as the median of those with one, just ahead of a backend at
 * exactly that median (never as 0 ms, which would put every untried backend ahead of a
 * known-fast one; the median, so that a failed backend's 10 s does not make every untried one
 * look slow): an untried backend is tried before the slower half, after the faster half.
 * With no sample at all, every backend ranks 0 (the readers' index order decides).
 */
const WEIGHT = 0.2;
const FAILURE_MS = 10_000;
/** How far ahead of a backend at exactly the median an untried one ranks. */
const UNTRIED_EDGE_MS = 1e-6;

export class BackendLatency {
  private readonly mean = new Map<string, number>();

  record(backendId: string, ms: number): void {
    const prev = this.mean.get(backendId);
    this.mean.set(backendId, prev === undefined ? ms : prev + WEIGHT * (ms - prev));
  }

  recordFailure(backendId: string): void {
    this.record(backendId, FAILURE_MS);
  }

  /** Has this backend answered (or failed) a read of this isolate's yet? */
  known(backendId: string): boolean {
    return this.mean.has(backendId);
  }

  of(backendId: string): number {
    const known = this.mean.get(backendId);
    if (known !== undefined) return known;
    if (this.mean.size === 0) return 0;
    const sorted = [...this.mean.values()].sort((a, b) => a - b);
    const mid = sorted.length >> 1;
    const median = sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
    return Math.max(0, median - UNTRIED_EDGE_MS);
  }
}
