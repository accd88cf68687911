/**
 * engine/reachability.ts's recheck (issue 37): before refusing on knowledge older than a second,
 * the engine asks a backend known down once more; the request that starts that probe waits for
 * it at most RECHECK_WAIT_MS, and while it runs (a hung backend's runs to its bound) every other
 * request is refused at once instead of waiting too. Timers are driven.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BackendError, type Backend } from '../../backends/types.ts';
import { BackendReachability, RECHECK_AFTER_MS, RECHECK_WAIT_MS } from '../../worker/engine/reachability.ts';

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
});
