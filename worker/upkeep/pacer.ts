/**
 * Paces the background work that reads and writes shards (the mover, upkeep/drain.ts; the
 * re-stripe, upkeep/restripe.ts) by each backend's configured `limits` (bytes and requests per
 * second): a step starts only once every backend it touches has had the time its limits give for
 * what this run already asked of it plus this step. One pacer per run: a run starts with a clean
 * slate, and what the client traffic asks of a backend is not counted (the limits bound what the
 * background adds to it).
 */

/** A backend's limits (config `backends[].limits`); absent fields: no limit. */
export interface BackendLimits {
  bytesPerSecond?: number;
  requestsPerSecond?: number;
}

/** What one step asks of one backend. */
export interface Charge {
  bytes: number;
  requests: number;
}

export class Pacer {
  private readonly started: number;
  private readonly used = new Map<string, Charge>();
  private readonly limits: Map<string, BackendLimits>;

  constructor(
    fleet: { id: string; limits?: BackendLimits }[],
    private readonly now: () => number,
    private readonly sleep: (ms: number) => Promise<void>,
  ) {
    this.started = now();
    this.limits = new Map(fleet.filter((b) => b.limits).map((b) => [b.id, b.limits!]));
  }

  /** Waits until the step (`charges` per backend id) fits every limit; false (without waiting) when that would pass `deadline`. */
  async admit(charges: Map<string, Charge>, deadline: number): Promise<boolean> {
    let readyAt = 0;
    for (const [id, charge] of charges) {
      const limit = this.limits.get(id);
      const used = this.used.get(id) ?? { bytes: 0, requests: 0 };
      if (limit?.bytesPerSecond) readyAt = Math.max(readyAt, this.started + ((used.bytes + charge.bytes) / limit.bytesPerSecond) * 1000);
      if (limit?.requestsPerSecond) readyAt = Math.max(readyAt, this.started + ((used.requests + charge.requests) / limit.requestsPerSecond) * 1000);
    }
    const wait = readyAt - this.now();
    if (wait > 0) {
      if (this.now() + wait >= deadline) return false;
      await this.sleep(wait);
    }
    for (const [id, charge] of charges) {
      const used = this.used.get(id) ?? { bytes: 0, requests: 0 };
      this.used.set(id, { bytes: used.bytes + charge.bytes, requests: used.requests + charge.requests });
    }
    return true;
  }
}
