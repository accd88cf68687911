/**
 * The local cron's timer (dev/local-cron.ts) on a driven clock: a scheduled handler that never
 * answers is abandoned after one period (at least 30 s), its call aborted and the reason logged,
 * and the next run follows; a run that answers leaves no timer but the next tick's.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { defaultRunTimeoutMs, startLocalCron, type ScheduledOutcome } from '../../dev/local-cron.ts';

describe('the local cron', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('abandons a run that hangs after its bound, aborting the call and saying so, and runs again a period later', async () => {
    const signals: AbortSignal[] = [];
    const lines: string[] = [];
    const cron = startLocalCron(
      (signal) => {
        signals.push(signal);
        return new Promise<ScheduledOutcome>(() => {}); // workerd never answers
      },
      60_000,
      (l) => lines.push(l),
    );
    expect(signals).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(59_999);
    expect(cron.runs).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(signals[0]!.aborted).toBe(true);
    expect(cron.runs).toBe(1);
    expect(cron.lastOutcome).toBe('no answer from the scheduled handler within 60 s: abandoned');
    expect(lines).toEqual(['cron: could not run the scheduled handler: no answer from the scheduled handler within 60 s: abandoned']);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(signals).toHaveLength(2); // the journal, collector and scrubber get their next run
    const stopping = cron.stop();
    await vi.advanceTimersByTimeAsync(60_000);
    await stopping;
  });

  it('a run that answers releases its bound: the only timer left is the next tick', async () => {
    const cron = startLocalCron(async () => ({ outcome: 'ok' }), 5_000);
    await vi.advanceTimersByTimeAsync(0);
    expect(cron).toMatchObject({ runs: 1, lastOutcome: 'ok' });
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(cron.runs).toBe(2);
    await cron.stop();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('the bound: one period, at least 30 s', () => {
    expect(defaultRunTimeoutMs(60_000)).toBe(60_000);
    expect(defaultRunTimeoutMs(1_000)).toBe(30_000);
  });
});
