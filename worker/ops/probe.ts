/**
 * The cheap probe of every backend, run by the cron and by a status or metrics read that finds
 * the last probe too old: one HEAD of a key that never exists (`shardgate-probe`, outside the
 * `sg1/` shard prefix). NotFound is the healthy answer: the backend is there and answered. The
 * call goes through the metered backend, so it counts as a request like any other (one HEAD per
 * backend per probe: the cheapest request class on every provider).
 */
import { isBackendError, type Backend } from '../../backends/types.ts';
import type { IsolateMeter } from './meter.ts';
import { errorMessage } from '../model/error-message.ts';

export const PROBE_KEY = 'shardgate-probe';
const PROBE_TIMEOUT_MS = 5000;

export async function probeBackends(backends: Backend[], meter: IsolateMeter, now: () => number = () => Date.now()): Promise<void> {
  await Promise.all(
    backends.map(async (b) => {
      const started = now();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<never>(
        (_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${PROBE_TIMEOUT_MS} ms`)), PROBE_TIMEOUT_MS)),
      );
      try {
        await Promise.race([b.head(PROBE_KEY), timeout]);
        meter.probe(b.id, { ok: true, ms: now() - started });
      } catch (err) {
        const answered = isBackendError(err, 'NotFound');
        meter.probe(b.id, { ok: answered, ms: now() - started, ...(answered ? {} : { error: errorMessage(err).slice(0, 300) }) });
      } finally {
        clearTimeout(timer);
      }
    }),
  );
}
