/**
 * The Worker entry: fetch -> the gateway's Hono app (or, when the gateway cannot be built from
 * its env, an S3 error saying why: startup-error.ts); the repair queue -> upkeep's repair; the
 * cron trigger -> upkeep's garbage collector and scrubber, then the backends' probe and a
 * data-health sample (ops). Each run is one JSON log line. No logic here.
 */
import type { RepairTask } from './engine/ec-store.ts';
import { gatewayFor, logLine, type Env, type Gateway } from './gateway.ts';
import { startupFailure } from './startup-error.ts';
import { collectGarbage } from './upkeep/collector.ts';
import { scrubBatch } from './upkeep/scrubber.ts';

export { CatalogObject } from './catalog/durable-object.ts';
export { OpsObject } from './ops/ops-object.ts';

export default {
  async fetch(request, env, ctx) {
    let g: Gateway;
    try {
      g = gatewayFor(env);
    } catch (err) {
      return startupFailure(request, err);
    }
    return g.app.fetch(request, env, ctx);
  },

  async queue(batch, env, ctx) {
    const g = gatewayFor(env);
    for (const msg of batch.messages) {
      try {
        await g.repair(msg.body); // logs and counts the outcome
        msg.ack();
      } catch {
        msg.retry({ delaySeconds: 30 });
      }
    }
    ctx.waitUntil(g.flusher.flush());
  },

  async scheduled(_event, env, ctx) {
    const g = gatewayFor(env);
    const started = Date.now();
    const collected = collectGarbage(g.catalog, g.units.byId).then(
      (n) => g.upkeep.collected(n, Date.now() - started, 'cron'),
      (err: unknown) => logLine({ msg: 'collect', outcome: 'failed', error: String((err as Error)?.message ?? err), ms: Date.now() - started }, true),
    );
    const jobs: Promise<unknown>[] = [collected];
    const { mode, objectsPerRun } = g.config.scrub;
    if (mode !== 'off') {
      const scrub = g.background.run(ctx, () => scrubBatch(g.catalog, g.units.byId, { mode, objectsPerRun }, g.enqueueRepair));
      jobs.push(scrub.then(
        (r) => g.upkeep.scrubbed(r, mode, Date.now() - started, 'cron'),
        (err: unknown) => logLine({ msg: 'scrub', mode, outcome: 'failed', error: String((err as Error)?.message ?? err), ms: Date.now() - started }, true),
      ));
    }
    for (const job of jobs) ctx.waitUntil(job);
    // After the upkeep: probe every backend, record a data-health sample, flush the counts.
    ctx.waitUntil(Promise.allSettled(jobs).then(() => g.ops.onCron()).catch((err: unknown) => logLine({ msg: 'ops', outcome: 'failed', error: String((err as Error)?.message ?? err) }, true)));
  },
} satisfies ExportedHandler<Env, RepairTask>;
