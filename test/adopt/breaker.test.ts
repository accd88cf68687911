/** The source's circuit breaker (worker/adopt/breaker.ts), on a driven clock. */
import { describe, expect, it } from 'vitest';
import { SourceBreaker } from '../../worker/adopt/breaker.ts';

describe('SourceBreaker', () => {
  it('opens after failures in a row, lets one trial through once cooled, closes on an answer and reopens on a failure', () => {
    const clock = { now: 0 };
    const b = new SourceBreaker(() => clock.now, 3, 1000);
    for (let i = 0; i < 2; i++) {
      expect(b.allow()).toBe(true);
      b.failed();
    }
    b.succeeded(); // an answer between failures: the count starts again
    for (let i = 0; i < 3; i++) {
      expect(b.allow()).toBe(true);
      b.failed();
    }
    expect(b.open).toBe(true);
    expect(b.allow()).toBe(false);
    clock.now = 999;
    expect(b.allow()).toBe(false);
    clock.now = 1000;
    expect(b.allow()).toBe(true); // the trial
    expect(b.allow()).toBe(false); // one at a time
    b.failed();
    expect(b.allow()).toBe(false);
    clock.now = 2000;
    expect(b.allow()).toBe(true);
    b.succeeded();
    expect(b.open).toBe(false);
    expect(b.allow()).toBe(true);
    expect(b.allow()).toBe(true);
  });
});
