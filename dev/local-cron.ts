/**
 * The cron, locally: wrangler dev never fires `[triggers] crons`, so without this the collector
 * never deletes superseded shards or expired reservations (one local state directory reached
 * 1.9 GB) and the scrubber never runs. Calls the Worker's real `scheduled` handler (the collector
 * and the scrubber, worker/index.ts) every `everyMs`, first once at start so that leftovers of an
 * earlier session go too. Runs never overlap: the next is timed from the end of the last.
 * Known gap: a fixed period, not the cron expressions of wrangler.toml (every minute there for the
 * journal, every 5 minutes for the rest;
 * shorter here by default, so local state stays small while you work).
 *
 * Each run is bounded (`runTimeoutMs`, by default one period and at least 30 s): once a call
 * hung for 300 s (Node's fetch gives up on a silent server only then) and the journal, collector
 * and scrubber were silent for five minutes. A run past its bound is abandoned (its signal
 * aborts the call to workerd), logged, and the next one is timed from then.
 */
import { errorMessage } from '../worker/model/error-message.ts';

export interface ScheduledOutcome {
  outcome: string;
}

export interface LocalCron {
  /** Completed runs, and how the last one ended ('ok', 'exception', or an error message). */
  readonly runs: number;
  readonly lastOutcome: string | null;
  /** Stops the timer and waits for a run in progress (at most its bound). */
  stop(): Promise<void>;
}

/** The bound of one run: a period, and at least 30 s (a run that works takes well under that). */
export function defaultRunTimeoutMs(everyMs: number): number {
  return Math.max(everyMs, 30_000);
}

export function startLocalCron(
  runScheduled: (signal: AbortSignal) => Promise<ScheduledOutcome>,
  everyMs: number,
  log: (line: string) => void = () => {},
  runTimeoutMs = defaultRunTimeoutMs(everyMs),
): LocalCron {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  const state = { runs: 0, lastOutcome: null as string | null };
  const tick = () => {
    // One controller and one timer per run, both released when the run settles either way.
    const abort = new AbortController();
    let bound: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      bound = setTimeout(() => {
        const err = new Error(`no answer from the scheduled handler within ${Math.round(runTimeoutMs / 1000)} s: abandoned`);
        abort.abort(err);
        reject(err);
      }, runTimeoutMs);
    });
    running = Promise.race([runScheduled(abort.signal), timedOut])
      .then(
        (r) => {
          state.lastOutcome = r.outcome;
          if (r.outcome !== 'ok') log(`cron: the scheduled handler ended with '${r.outcome}' (see the Worker's log above)`);
        },
        (err: unknown) => {
          state.lastOutcome = errorMessage(err);
          if (!stopped) log(`cron: could not run the scheduled handler: ${state.lastOutcome}`);
        },
      )
      .finally(() => {
        clearTimeout(bound);
        state.runs++;
        running = undefined;
        if (!stopped) timer = setTimeout(tick, everyMs);
      });
  };
  tick();
  return {
    get runs() {
      return state.runs;
    },
    get lastOutcome() {
      return state.lastOutcome;
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
