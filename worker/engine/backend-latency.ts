/**
 * BackendLatency: how quickly each backend has been answering shard reads, kept by one object per
 * gateway (per isolate: each isolate learns from its own reads). An exponentially weighted mean
 * of the time to a response, a failure counted as a very slow answer. A read that must decode
 * takes its extra shards from the backends answering fastest; data shards always come first
 * because they need no decoding. Unknown backends rank as fast, so every backend gets tried.
 */
const WEIGHT = 0.2;
const FAILURE_MS = 10_000;

export class BackendLatency {
  private readonly mean = new Map<string, number>();

  record(backendId: string, ms: number): void {
    const prev = this.mean.get(backendId);
    this.mean.set(backendId, prev === undefined ? ms : prev + WEIGHT * (ms - prev));
  }

  recordFailure(backendId: string): void {
    this.record(backendId, FAILURE_MS);
  }

  of(backendId: string): number {
    return this.mean.get(backendId) ?? 0;
  }
}
