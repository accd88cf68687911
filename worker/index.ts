/**
 * The Worker entry: fetch -> the gateway's Hono app; the repair queue -> upkeep's repair; the
 * cron trigger -> upkeep's garbage collector and scrubber. No logic here. A deployed gateway
 * whose config is refused (deployment.ts) answers every request with the refusal; its queue
 * and cron runs throw (messages are retried) until the config is fixed.
 */
import type { RepairTask } from './engine/ec-store.ts';
import { appFor, gatewayFor, type Env } from './gateway.ts';
import { collectGarbage } from './upkeep/collector.ts';
import { scrubBatch } from './upkeep/scrubber.ts';

export { CatalogObject } from './catalog/durable-object.ts';

export default {
  async fetch(request, env, ctx) {
    return appFor(env).fetch(request, env, ctx);
  },

  async queue(batch, env) {
    const g = gatewayFor(env);
    for (const msg of batch.messages) {
      try {
        await g.repair(msg.body);
        msg.ack();
      } catch (err) {
        console.error('shardgate: repair failed, will retry', msg.body, err);
        msg.retry({ delaySeconds: 30 });
      }
    }
  },

  async scheduled(_event, env, ctx) {
    const g = gatewayFor(env);
    ctx.waitUntil(collectGarbage(g.catalog, g.units.byId).then((n) => console.log(`shardgate: collected ${n} garbage units`)));
    const { mode, objectsPerRun } = g.config.scrub;
    if (mode !== 'off') {
      const scrub = g.background.run(ctx, () => scrubBatch(g.catalog, g.units.byId, { mode, objectsPerRun }, g.enqueueRepair));
      ctx.waitUntil(scrub.then((r) => console.log(`shardgate: scrubbed ${r.objects} objects, ${r.shards} shards, ${r.damaged} damaged`)));
    }
  },
} satisfies ExportedHandler<Env, RepairTask>;
