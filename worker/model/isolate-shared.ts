/**
 * A value an isolate computes now and then (a record read from the catalog, a status document, a
 * probe's results) and shares with its concurrent requests, without sharing a promise between
 * them. Workers cancel a request that waits on a promise of another request's I/O with nothing
 * of its own in flight ("the Workers runtime canceled this request because it detected that your
 * Worker's code had hung and would never generate a response"), and a promise whose request was
 * cancelled may never settle. So a request never awaits another's computation. It takes the last
 * value while it is fresh, or, while another request computes the next one, while it is not yet
 * stale. Without a value to take, it waits for the other's result with timers of its own
 * (`waitMs`, polled) and then computes its own: at most one computation per burst of requests
 * unless the first is slow, and no request left waiting on a computation that never ends.
 * A failed computation leaves the last value as it was.
 */

/** How often a request waiting for another's computation looks whether it has ended. */
const POLL_MS = 20;

export class IsolateShared<T> {
  private last: { at: number; value: T } | undefined;
  /** Computations in flight, and when the latest began (one whose request was cancelled never ends: it stops counting after staleMs). */
  private computing = 0;
  private latestStart = -Infinity;

  constructor(
    private readonly o: {
      /** How long a value is used without computing another. */
      freshMs: number;
      /** How long it is still used while another request computes the next one (at least freshMs). */
      staleMs: number;
      /** How long a request with no value to use waits for another's computation before computing its own (0: not at all). */
      waitMs?: number;
      now?: () => number;
    },
  ) {}

  /** The shared value, or `compute()`'s (this request's own computation) when there is none to use. */
  async get(compute: () => Promise<T>): Promise<T> {
    const now = this.now();
    const usable = this.usable(now);
    if (usable !== undefined) return usable.value;
    if (this.busy(now) && (this.o.waitMs ?? 0) > 0) {
      const until = Date.now() + this.o.waitMs!;
      while (this.busy(this.now()) && Date.now() < until) await new Promise((r) => setTimeout(r, POLL_MS));
      const computed = this.usable(this.now());
      if (computed !== undefined) return computed.value;
    }
    this.computing++;
    this.latestStart = now;
    try {
      const value = await compute();
      // As of when its computation began: a later value (set meanwhile) is kept.
      if (this.last === undefined || this.last.at <= now) this.last = { at: now, value };
      return value;
    } finally {
      this.computing--;
    }
  }

  /** A value known now (a write that changed what is shared): used as fresh from `at`. */
  set(value: T, at = this.now()): void {
    this.last = { at, value };
  }

  private now(): number {
    return (this.o.now ?? Date.now)();
  }

  private busy(now: number): boolean {
    return this.computing > 0 && now - this.latestStart < this.o.staleMs;
  }

  /** The last value if fresh, or not yet stale while another request computes. */
  private usable(now: number): { at: number; value: T } | undefined {
    const last = this.last;
    if (last === undefined) return undefined;
    if (now - last.at < this.o.freshMs) return last;
    if (this.busy(now) && now - last.at < this.o.staleMs) return last;
    return undefined;
  }
}

/**
 * A bounded memo of values by id (data keys opened, a KMS key's material), shared by an isolate's
 * requests on the same terms as IsolateShared: a request may take an entry that has settled; one
 * still being computed by another request is waited for with the asker's own timers, up to
 * `waitMs`, and then computed again by the asker itself (not shared). Computations that end
 * within microtasks (Web Crypto) are never seen pending by another request; ones that do I/O (a
 * catalog read, an external key service) are the reason for this.
 */
export class IsolateMemo<T> {
  /** Most recently used last. `until`: when the entry must be computed again. */
  private readonly entries = new Map<string, { p: Promise<T>; done: boolean; until: number }>();

  constructor(private readonly o: { max: number; waitMs: number; now?: () => number }) {}

  /** The memo's value of `id`, else `make()`'s, kept for `ttlMs` (a failed one is not kept). */
  async get(id: string, make: () => Promise<T>, ttlMs = Number.POSITIVE_INFINITY): Promise<T> {
    let entry = this.entries.get(id);
    if (entry !== undefined && (this.o.now ?? Date.now)() >= entry.until) {
      this.entries.delete(id);
      entry = undefined;
    }
    if (entry !== undefined && !entry.done) {
      const until = Date.now() + this.o.waitMs;
      while (!entry.done && Date.now() < until) await new Promise((r) => setTimeout(r, POLL_MS));
      if (!entry.done) return await make();
      if (this.entries.get(id) !== entry) return await this.get(id, make, ttlMs); // it failed: dropped
    }
    if (entry !== undefined) {
      this.entries.delete(id);
      this.entries.set(id, entry);
      return await entry.p;
    }
    const made = { p: make(), done: false, until: (this.o.now ?? Date.now)() + ttlMs };
    made.p.then(
      () => {
        made.done = true;
      },
      () => {
        made.done = true;
        if (this.entries.get(id) === made) this.entries.delete(id);
      },
    );
    if (this.entries.size >= this.o.max) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(id, made);
    return await made.p;
  }

  delete(id: string): void {
    this.entries.delete(id);
  }
}
