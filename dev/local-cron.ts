/**
 * The cron, locally: wrangler dev never fires `[triggers] crons`, so without this the collector
 * never deletes superseded shards or expired reservations (one local state directory reached
 * 1.9 GB) and the scrubber never runs. Calls the Worker's real `scheduled` handler (the collector
 * and the scrubber, worker/index.ts) every `everyMs`, first once at start so that leftovers of an
 * earlier session go too. Runs never overlap: the next is timed from the end of the last.
 * Known gap: a fixed period, not the cron expressions of wrangler.toml (every minute there for the
 * journal, every 5 minutes for the rest;
 * shorter here by default, so local state stays small while you work).
 */

export interface ScheduledOutcome {
  outcome: string;
}

export interface LocalCron {
  /** Completed runs, and how the last one ended ('ok', 'exception', or an error message). */
  readonly runs: number;
  readonly lastOutcome: string | null;
  /** Stops the timer and waits for a run in progress. */
  stop(): Promise<void>;
}

export function startLocalCron(runScheduled: () => Promise<ScheduledOutcome>, everyMs: number, log: (line: string) => void = () => {}): LocalCron {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  const state = { runs: 0, lastOutcome: null as string | null };
  const tick = () => {
    running = runScheduled().then(
      (r) => {
        state.lastOutcome = r.outcome;
        if (r.outcome !== 'ok') log(`cron: the scheduled handler ended with '${r.outcome}' (see the Worker's log above)`);
      },
      (err: unknown) => {
        state.lastOutcome = String((err as Error)?.message ?? err);
        if (!stopped) log(`cron: could not run the scheduled handler: ${state.lastOutcome}`);
      },
    ).finally(() => {
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
