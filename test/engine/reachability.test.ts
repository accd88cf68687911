/**
 * engine/reachability.ts's recheck (issue 37): before refusing on knowledge older than a second,
 * the engine asks a backend known down once more; the request that starts that probe waits for
 * it at most RECHECK_WAIT_MS, and while it runs (a hung backend's runs to its bound) every other
 * request is refused at once instead of waiting too. Timers are driven.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BackendError, type Backend } from '../../backends/types.ts';
import { BackendReachability, PROBE_ABANDONED_MS, RECHECK_AFTER_MS, RECHECK_WAIT_MS } from '../../worker/engine/reachability.ts';

describe('recheck', () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it('the first asker waits at most RECHECK_WAIT_MS; later askers do not wait while the probe runs; its answer is kept', async () => {
    let clock = 0;
    const r = new BackendReachability(new Set(), () => clock);
    let answer: ((ok: boolean) => void) | undefined;
    let heads = 0;
    const hung = {
      id: 'h',
      domain: 'z',
      head: () => (heads++, new Promise((resolve, reject) => (answer = (ok) => (ok ? resolve({}) : reject(new BackendError('h', 'Timeout', 'no answer')))))),
    } as unknown as Backend;
    r.report('h', false, true);
    await r.recheck([hung]); // knowledge fresh: no probe
    expect(heads).toBe(0);
    clock += RECHECK_AFTER_MS;
    let firstDone = false;
    const first = r.recheck([hung]).then(() => void (firstDone = true));
    await vi.advanceTimersByTimeAsync(RECHECK_WAIT_MS - 1);
    expect(firstDone).toBe(false);
    let secondDone = false;
    await r.recheck([hung]).then(() => void (secondDone = true)); // the probe is running: not waited for
    expect(secondDone).toBe(true);
    await vi.advanceTimersByTimeAsync(1);
    await first;
    expect(heads).toBe(1);
    answer!(false); // the hung probe ends at its bound: still down, from now
    await vi.advanceTimersByTimeAsync(0);
    expect(r.isDown('h')).toBe(true);
    clock += RECHECK_AFTER_MS;
    const third = r.recheck([hung]);
    answer!(true); // back
    await third;
    expect(heads).toBe(2);
    expect(r.isDown('h')).toBe(false);
  });

  it('a probe that never settles (its request ended and the runtime dropped its I/O) is started again after PROBE_ABANDONED_MS', async () => {
    let clock = 0;
    const r = new BackendReachability(new Set(), () => clock);
    const answers: ((ok: boolean) => void)[] = [];
    const backend = {
      id: 'b',
      domain: 'z',
      head: () => new Promise((resolve, reject) => answers.push((ok) => (ok ? resolve({}) : reject(new BackendError('b', 'Unavailable', 'refused'))))),
    } as unknown as Backend;
    r.report('b', false, true); // hung: down for RETRY_DOWN_AFTER_MS
    clock += RECHECK_AFTER_MS;
    const first = r.recheck([backend]);
    await vi.advanceTimersByTimeAsync(RECHECK_WAIT_MS);
    await first;
    expect(answers.length).toBe(1); // started, never answered (dropped)
    clock += PROBE_ABANDONED_MS - RECHECK_AFTER_MS - 1;
    r.report('b', false, true); // still failing calls meanwhile keep it down
    clock += RECHECK_AFTER_MS;
    await r.recheck([backend]);
    expect(answers.length).toBe(1); // still counted as in flight: not before the bound
    clock += 1;
    const again = r.recheck([backend]);
    expect(answers.length).toBe(2);
    answers[0]!(false); // the abandoned probe settles late, while its successor runs:
    await vi.advanceTimersByTimeAsync(0);
    clock += RECHECK_AFTER_MS;
    await r.recheck([backend]); // the successor still counts as in flight: no third probe
    expect(answers.length).toBe(2);
    answers[1]!(true); // the new probe finds it back
    await vi.advanceTimersByTimeAsync(RECHECK_WAIT_MS);
    await again;
    expect(r.isDown('b')).toBe(false);
  });
});
