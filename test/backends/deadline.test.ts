/**
 * backends/deadline.ts and model/request-deadline.ts (issue 37): every backend wait is bounded by
 * what the request allows; an upload that makes progress is never cut. Timers are driven
 * (vi.useFakeTimers), nothing sleeps.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DeadlineBackend } from '../../backends/deadline.ts';
import { FaultyBackend } from '../../backends/faulty.ts';
import { MemoryBackend } from '../../backends/memory.ts';
import { isBackendError, type ChunkSource } from '../../backends/types.ts';
import { deadlineOf, waitBound, withRequestDeadline } from '../../worker/model/request-deadline.ts';

describe('DeadlineBackend', () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it('a hung get is aborted at the bound with Timeout; the hung backend sees the abort', async () => {
    const hung = new FaultyBackend(new MemoryBackend({ id: 'h', domain: 'z' })).hangWhen();
    const b = new DeadlineBackend(hung, () => ({ ms: 1000 }));
    const got = b.get('k').catch((e) => e);
    await vi.advanceTimersByTimeAsync(999);
    expect(hung.abortedHangs).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(isBackendError(await got, 'Timeout')).toBe(true);
    expect(hung.abortedHangs.map((c) => c.op)).toEqual(['get']);
  });

  it('a hung head (no signal to pass) still answers Timeout at the bound', async () => {
    const b = new DeadlineBackend(new FaultyBackend(new MemoryBackend({ id: 'h', domain: 'z' })).hangWhen(), () => ({ ms: 50 }));
    const got = b.head('k').catch((e) => e);
    await vi.advanceTimersByTimeAsync(50);
    expect(isBackendError(await got, 'Timeout')).toBe(true);
  });

  it('an upload whose chunks keep coming is never cut, though it lasts far longer than the bound; a slow body does not count against the backend', async () => {
    const memory = new MemoryBackend({ id: 'm', domain: 'z' });
    const b = new DeadlineBackend(memory, () => ({ ms: 100 }));
    let sent = 0;
    const source: ChunkSource = {
      read: async () => {
        if (sent === 10) return null;
        // The body arrives late (a slow client): 150 ms a chunk, more than the bound, while the
        // backend waits for it; that wait is the body's, not the backend's.
        await new Promise((r) => setTimeout(r, 150));
        sent++;
        return new Uint8Array(10).fill(sent);
      },
      cancel: () => {},
    };
    const done = b.put('k', source, 100);
    await vi.advanceTimersByTimeAsync(1600);
    await done;
    expect((await memory.head('k')).size).toBe(100);
  });

  it('an upload whose backend stops taking chunks is cut one bound after the last chunk it took, not sooner', async () => {
    const memory = new MemoryBackend({ id: 'm', domain: 'z' });
    // A backend that takes three chunks, 60 ms apart, then hangs until its signal aborts.
    const stalls = Object.assign(Object.create(memory) as MemoryBackend, {
      async put(_key: string, body: ChunkSource, _length: number, opts?: { signal?: AbortSignal }) {
        for (let i = 0; i < 3; i++) {
          await body.read();
          await new Promise((r) => setTimeout(r, 60));
        }
        await body.read();
        await new Promise((_, reject) => opts?.signal?.addEventListener('abort', () => reject(opts.signal!.reason), { once: true }));
      },
    });
    const b = new DeadlineBackend(stalls, () => ({ ms: 100 }));
    const source: ChunkSource = { read: async () => new Uint8Array(10), cancel: () => {} };
    let outcome: unknown = 'pending';
    b.put('k', source, 100).then(
      () => (outcome = 'stored'),
      (e) => (outcome = e),
    );
    // The fourth chunk is taken at 180 ms: the bound runs from there, to 280 ms.
    await vi.advanceTimersByTimeAsync(279);
    expect(outcome).toBe('pending');
    await vi.advanceTimersByTimeAsync(1);
    expect(isBackendError(outcome, 'Timeout')).toBe(true);
  });

  it('the bound of a call made within a request is what is left of the request, until its answer', () => {
    expect(waitBound(10_000, 5000)).toEqual({ ms: 10_000 }); // no request: the configured wait
    const d = { at: deadlineOf(1000, 10_000, true), answered: false };
    expect(d.at).toBe(11_000);
    withRequestDeadline(d, () => {
      expect(waitBound(10_000, 4000)).toEqual({ ms: 7000 });
      expect(waitBound(10_000, 12_000)).toEqual({ ms: 0 });
      d.answered = true; // the response's body streams: the per-call wait alone
      expect(waitBound(10_000, 12_000)).toEqual({ ms: 10_000 });
    });
    // Not an S3 read (a PUT lasts as long as its client sends, a copy as long as the copy): its calls have the per-call wait alone.
    const put = { at: deadlineOf(1000, 10_000, false), answered: false };
    withRequestDeadline(put, () => expect(waitBound(10_000, 60_000)).toEqual({ ms: 10_000 }));
  });
});
