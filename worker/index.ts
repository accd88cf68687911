/**
 * The Worker entry: fetch -> the gateway's Hono app (or, when the gateway cannot be built from
 * its env, an S3 error saying why: startup-error.ts; or, deployed with a config the deployment
 * review refuses, the refusal: deployment.ts, refusal.ts); the repair queue -> upkeep's repair;
 * the cron trigger -> upkeep's garbage collector and scrubber, then the backends' probe and a
 * data-health sample (ops). A refused gateway's queue and cron runs throw (messages are retried)
 * until the config is fixed. Each run is one JSON log line. No logic here.
 */
import type { Hono } from 'hono';
import type { RepairTask } from './engine/ec-store.ts';
import { appFor, gatewayFor, logLine, type Env } from './gateway.ts';
import type { AppEnv } from './s3/context.ts';
import { startupFailure } from './startup-error.ts';
import { collectGarbage } from './upkeep/collector.ts';
import { repairDegraded } from './upkeep/repair-sweep.ts';
import { scrubBatch } from './upkeep/scrubber.ts';

/** Degraded units the cron repairs itself when no repair queue is bound (subrequests per run). */
const QUEUELESS_REPAIRS_PER_CRON = 50;

export { CatalogObject } from './catalog/durable-object.ts';
export { OpsObject } from './ops/ops-object.ts';

export default {
  async fetch(request, env, ctx) {
    let app: Hono<AppEnv>;
    try {
      app = appFor(env);
    } catch (err) {
      return startupFailure(request, err);
    }
    return app.fetch(request, env, ctx);
  },

  async queue(batch, env, ctx) {
    const g = gatewayFor(env);
    // Every message is acked: the bucket's worklist in the catalog owns retries (backoff, never
    // giving up, stuck units counted), so a failure is reported there instead of retried here.
    await g.background.run(ctx, async () => {
      for (const msg of batch.messages) {
        const t = msg.body;
        try {
          await g.repair(t); // logs and counts the outcome; a success takes the unit off the worklist
        } catch (err) {
          await g.catalog.repairFailed(t.bucket, t.key, t.unitId, String((err as Error)?.message ?? err)).catch((e: unknown) => {
            logLine({ msg: 'repair', level: 'warn', event: 'could not record a failed repair', bucket: t.bucket, key: t.key, unitId: t.unitId, error: String((e as Error)?.message ?? e) });
          });
        }
        msg.ack();
      }
    });
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
    // Every bucket's repair worklist awake (a no-op for an idle or empty one): the backstop for
    // an alarm that was never set (a catalog written by an older release). Without a repair
    // queue the alarms hand nothing on: the cron repairs a batch of the worklists itself.
    if (!env.REPAIR_QUEUE) {
      ctx.waitUntil(g.background.run(ctx, () => repairDegraded(g.catalog, g.repair, { limit: QUEUELESS_REPAIRS_PER_CRON })).catch((err: unknown) => {
        logLine({ msg: 'repair', level: 'warn', event: 'cron repair pass failed', error: String((err as Error)?.message ?? err) });
      }));
    }
    ctx.waitUntil(g.catalog.listBucketRecords().then((buckets) => Promise.all(buckets.map((b) => g.catalog.repairSoon(b.name, false)))).catch((err: unknown) => {
      logLine({ msg: 'repair', level: 'warn', event: 'could not wake the repair worklists', error: String((err as Error)?.message ?? err) });
    }));
    // After the upkeep: probe every backend (a backend back wakes every worklist), record a
    // data-health sample, flush the counts.
    ctx.waitUntil(Promise.allSettled(jobs).then(() => g.background.run(ctx, () => g.ops.onCron())).catch((err: unknown) => logLine({ msg: 'ops', outcome: 'failed', error: String((err as Error)?.message ?? err) }, true)));
  },
} satisfies ExportedHandler<Env, RepairTask>;
