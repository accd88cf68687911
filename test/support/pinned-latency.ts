/**
 * Pins what an isolate's reads have measured of its backends (engine/backend-latency.ts): each
 * backend at `ms`, and later reads record nothing. A test whose reads decide on latency (a column
 * read streams ahead from backends 10 ms away) then decides on the figure it states, not on how
 * long a busy machine took to answer a memory backend.
 */
import type { BackendLatency } from '../../worker/engine/backend-latency.ts';

export function pinLatency(latency: BackendLatency, backendIds: readonly string[], ms: number): void {
  for (const id of backendIds) for (let i = 0; i < 50; i++) latency.record(id, ms);
  latency.record = () => {};
  latency.recordFailure = () => {};
}
