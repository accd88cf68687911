/**
 * When a catalog object's alarm may be set: never at or before now.
 *
 * workerd clears an alarm that is set, while the alarm handler runs, for the time the running
 * alarm was scheduled (cloudflare/workerd#6866): the handler's Date.now() does not move until it
 * does I/O, so a handler that finds work due "now" and sets the alarm to `Date.now()` sets exactly
 * that time, and the chain of wake-ups ends when the handler returns. In production such an alarm
 * is kept but may fire tens of seconds late. Measured here: a bucket's repair worklist stopped
 * handing units on for good after an outage (test/engine-s3rver/redundancy.test.ts, about one run
 * in three under load) until something else woke it. One millisecond ahead chains reliably.
 */
export function alarmTime(at: number, now: number): number {
  return Math.max(at, now + 1);
}
