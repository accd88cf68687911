/**
 * How quickly each backend has been answering shard reads (per isolate): an exponentially
 * weighted mean of the time to a response, with a failure counted as a very slow answer. A read
 * that must decode takes its extra shards from the backends answering fastest, as the issue's
 * "data shards first, then the cheapest/fastest" asks; data shards always come first because
 * they need no decoding. Unknown backends rank as fast, so every backend gets tried.
 */
const WEIGHT = 0.2;
const FAILURE_MS = 10_000;

const mean = new Map<string, number>();

export function recordLatency(backendId: string, ms: number): void {
  const prev = mean.get(backendId);
  mean.set(backendId, prev === undefined ? ms : prev + WEIGHT * (ms - prev));
}

export function recordFailure(backendId: string): void {
  recordLatency(backendId, FAILURE_MS);
}

export function latencyOf(backendId: string): number {
  return mean.get(backendId) ?? 0;
}

/** Tests only: forget everything measured. */
export function resetLatency(): void {
  mean.clear();
}
