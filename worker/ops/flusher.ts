/**
 * OpsFlusher: brings an isolate's counts (meter.ts) to the shared record, at most every
 * `everyMs`, never per request. After a request that counted something it schedules one flush
 * for when the interval is up, kept alive by that request's waitUntil (an isolate's timers only
 * run while some request keeps it alive); the status and metrics routes flush at once, so what
 * they show includes their own isolate. A flush that fails puts its counts back for the next.
 * Known gap: counts of an isolate that is evicted before its flush fires are lost (at most
 * `everyMs` of its traffic).
 */
import type { IsolateMeter } from './meter.ts';
import type { OpsDelta } from './types.ts';
import { errorMessage } from '../model/error-message.ts';

export class OpsFlusher {
  private lastFlush = 0;
  private scheduled: Promise<void> | null = null;

  constructor(
    private readonly meter: IsolateMeter,
    private readonly send: (delta: OpsDelta) => Promise<void>,
    private readonly everyMs: number,
    private readonly now: () => number = () => Date.now(),
  ) {}

  /** After a request: makes sure its counts reach the record within `everyMs`. */
  schedule(waitUntil: (p: Promise<unknown>) => void): void {
    if (!this.meter.hasPending || this.scheduled) return;
    const wait = Math.max(0, this.lastFlush + this.everyMs - this.now());
    const p = new Promise((r) => setTimeout(r, wait))
      .then(() => this.flush())
      .finally(() => {
        this.scheduled = null;
      });
    this.scheduled = p;
    waitUntil(p);
  }

  /** Sends what was counted now (nothing to send: no call). Never throws. */
  async flush(): Promise<void> {
    const delta = this.meter.take();
    if (!delta) return;
    this.lastFlush = this.now();
    try {
      await this.send(delta);
    } catch (err) {
      this.meter.restore(delta);
      console.error(JSON.stringify({ level: 'error', msg: 'ops: could not record counters', error: errorMessage(err) }));
    }
  }
}
