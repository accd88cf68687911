/**
 * The Worker entry: S3 requests go to the gateway's Hono app; the repair queue runs repairs and
 * the cron trigger the garbage collector and the scrubber; `/_shardgate/status` (a path no bucket
 * can have: bucket names cannot contain "_") reports the coder kernel and the backends, without
 * secrets; `/_shardgate/admin/` is the operator's signed API (admin.ts).
 */
import { activeKernel, checksums } from '../coder-wasm/index.ts';
import type { RepairTask } from './engine/ec-store.ts';
import { collectGarbage } from './upkeep/collector.ts';
import { scrubBatch } from './upkeep/scrubber.ts';
import { ADMIN_PREFIX, handleAdmin } from './admin.ts';
import { gatewayFor, repairNow, requestContext, type Env } from './gateway.ts';

export { CatalogObject } from './catalog/durable-object.ts';

function status(env: Env): Response {
  const g = gatewayFor(env);
  return Response.json({
    service: 'shardgate',
    coder: { kernel: activeKernel(), crc32: checksums().crc32Impl },
    backends: g.backends.map((b) => ({ id: b.id, domain: b.domain })),
    policies: g.config.policies,
    defaultPolicy: g.config.defaultPolicy,
  });
}

export default {
  async fetch(request, env, ctx) {
    const path = new URL(request.url).pathname;
    if (path === '/_shardgate/status') return status(env);
    if (path.startsWith(ADMIN_PREFIX)) return requestContext.run(ctx, () => handleAdmin(request, gatewayFor(env)));
    return requestContext.run(ctx, () => gatewayFor(env).app.fetch(request, env, ctx));
  },

  async queue(batch, env) {
    const g = gatewayFor(env);
    for (const msg of batch.messages) {
      try {
        await repairNow(g, msg.body);
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
      const scrub = requestContext.run(ctx, () => scrubBatch(g.catalog, g.units.byId, { mode, objectsPerRun }, g.enqueueRepair));
      ctx.waitUntil(scrub.then((r) => console.log(`shardgate: scrubbed ${r.objects} objects, ${r.shards} shards, ${r.damaged} damaged`)));
    }
  },
} satisfies ExportedHandler<Env, RepairTask>;
