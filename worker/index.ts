/**
 * The Worker entry: fetch -> the gateway's Hono app (or, when the gateway cannot be built from
 * its env, an S3 error saying why: startup-error.ts; or, deployed with a config the deployment
 * review refuses, the refusal: deployment.ts, refusal.ts); the repair queue -> upkeep's worklist
 * consumer (repair-worklist.ts); the cron triggers -> the catalog journal (JOURNAL_CRON, every
 * minute, in an invocation of its own), and (any other cron) upkeep's garbage collector, scrubber,
 * lifecycle job, the journal's upkeep, access logs' delivery, worklist wake-up, the adopted buckets' backfill, the mover (while a backend drains) and the re-stripe (with a
 * queue, the cron only starts their chains of queue links: upkeep/move-chain.ts; a cron named
 * LIFECYCLE_ONLY_CRON: the lifecycle job alone), then the backends' probe and a data-health sample (ops). A refused gateway's queue and cron runs throw (messages are retried)
 * until the config is fixed. Each run is one JSON log line. The dispatch and its per-run bounds
 * live here; the jobs themselves in upkeep/ and ops/, what is built per isolate in gateway.ts.
 */
import type { RepairTask } from './engine/index.ts';
import { appFor, gatewayFor, logLine, type Env, type RequestHandler } from './gateway.ts';
import { startupFailure } from './app/startup-error.ts';
import { collectGarbage } from './upkeep/collector.ts';
import { consumeRepairs, wakeWorklists } from './upkeep/repair-worklist.ts';
import { scrubBatch } from './upkeep/scrubber.ts';
import { LIFECYCLE_ONLY_CRON, lifecycleBatch } from './upkeep/lifecycle.ts';
import { isMoveLink, runMoveLink, startMoveChains, type ChainDeps, type MoveLink } from './upkeep/move-chain.ts';
import { splitDuePartitions } from './upkeep/split-partitions.ts';
import { cronAdopt, isAdoptLink, runAdoptLink, type AdoptLink } from './adopt/index.ts';

/** How long a cron run may spend splitting partitions (a split of millions of rows takes longer: it resumes from its own alarm). */
const PARTITION_SPLIT_BUDGET_MS = 60_000;
import { errorMessage } from './model/error-message.ts';

/** Shards one cron run moves at most (each 5 to 7 subrequests; the collector and the scrubber share the invocation's 1000). */
const DRAIN_MOVES_PER_RUN = 30;
/** Versions one cron run re-stripes at most (upkeep/restripe.ts; its requests are bounded too: gateway.ts). */
const RESTRIPE_VERSIONS_PER_RUN = 20;
/** Write-through retry records one cron run syncs at most (each a shard read and one source write). */
const WRITE_THROUGH_PER_RUN = 50;
/** The journal's cron of wrangler.toml (every minute); the upkeep has its own (every fifth minute). */
const JOURNAL_CRON = '* * * * *';

/** The mover chain's parts, from the gateway and its queue. */
function moveChainDeps(g: ReturnType<typeof gatewayFor>, env: Env): ChainDeps {
  return {
    catalog: g.catalog,
    send: async (link) => void (await env.REPAIR_QUEUE!.send(link)),
    drain: (o) => g.drain(o, 'queue'),
    restripe: (o) => g.restripe(o, 'queue'),
  };
}

export { CatalogObject } from './catalog/durable-object.ts';
export { OpsObject } from './ops/ops-object.ts';

export default {
  async fetch(request, env, ctx) {
    let app: RequestHandler;
    try {
      app = appFor(env);
    } catch (err) {
      return startupFailure(request, err);
    }
    return app.fetch(request, env, ctx);
  },

  async queue(batch, env, ctx) {
    const g = gatewayFor(env);
    const deps = { catalog: g.catalog, repair: g.repair, log: logLine };
    const links = batch.messages.filter((m): m is Message<MoveLink> => isMoveLink(m.body));
    const adoptLinks = batch.messages.filter((m): m is Message<AdoptLink> => isAdoptLink(m.body));
    const repairs = batch.messages.filter((m): m is Message<RepairTask> => !isMoveLink(m.body) && !isAdoptLink(m.body));
    await g.background.run(ctx, () => consumeRepairs(repairs, deps));
    // The mover's links (upkeep/move-chain.ts): a link that throws is retried by the queue.
    for (const link of links) {
      await g.background.run(ctx, () => runMoveLink(link.body, moveChainDeps(g, env), links.length));
      link.ack();
    }
    // The backfill's links (adopt/backfill-chain.ts), likewise.
    const backfill = g.backfill;
    const chain = g.adoptChain;
    for (const link of adoptLinks) {
      if (backfill && chain) {
        const { report } = await g.background.run(ctx, () =>
          runAdoptLink(link.body, { ...chain, run: (bucket, o) => backfill.run(bucket, o) }, adoptLinks.length),
        );
        if (report && !report.idle) {
          const { problems, ...counts } = report;
          logLine({ msg: 'adopt', by: 'queue', ...counts, ...(problems[0] ? { firstProblem: problems[0] } : {}) }, report.failed > 0);
        }
      }
      link.ack();
    }
    ctx.waitUntil(g.flusher.flush());
  },

  async scheduled(event, env, ctx) {
    const g = gatewayFor(env);
    const started = Date.now();
    if (event.cron === JOURNAL_CRON) {
      // The catalog journal, alone in its invocation (its own subrequests): upkeep/journal.ts.
      ctx.waitUntil(
        g.background
          .run(ctx, () => g.journal('cron'))
          .catch((err: unknown) => logLine({ msg: 'journal', outcome: 'failed', error: errorMessage(err), ms: Date.now() - started }, true))
          .then(() => g.flusher.flush()),
      );
      return;
    }
    const lifecycle = g.background
      .run(ctx, () => lifecycleBatch(g.catalog, g.lifecycleStore(), { dayMs: g.lifecycleDayMs }))
      .then(
        (r) => g.upkeep.lifecycled(r, Date.now() - started, 'cron'),
        (err: unknown) => logLine({ msg: 'lifecycle', outcome: 'failed', error: errorMessage(err), ms: Date.now() - started }, true),
      );
    if (event.cron === LIFECYCLE_ONLY_CRON) {
      ctx.waitUntil(lifecycle.then(() => g.flusher.flush()));
      return;
    }
    const collected = collectGarbage(g.catalog, g.units.byId).then(
      (n) => g.upkeep.collected(n, Date.now() - started, 'cron'),
      (err: unknown) => logLine({ msg: 'collect', outcome: 'failed', error: errorMessage(err), ms: Date.now() - started }, true),
    );
    const jobs: Promise<unknown>[] = [collected, lifecycle];
    const { mode, unitsPerRun } = g.config.scrub;
    if (mode !== 'off') {
      const scrub = g.background.run(ctx, () => scrubBatch(g.catalog, g.units.byId, { mode, unitsPerRun, headsBy: g.scrubHeadsBy }, g.enqueueRepair));
      jobs.push(
        scrub.then(
          (r) => g.upkeep.scrubbed(r, mode, Date.now() - started, 'cron'),
          (err: unknown) => logLine({ msg: 'scrub', mode, outcome: 'failed', error: errorMessage(err), ms: Date.now() - started }, true),
        ),
      );
    }
    // The journal's segments: scrubbed, repaired, moved and re-striped as data is (upkeep/journal-upkeep.ts).
    jobs.push(
      g.background
        .run(ctx, () => g.journalUpkeep('cron'))
        .catch((err: unknown) => logLine({ msg: 'journal upkeep', outcome: 'failed', error: errorMessage(err), ms: Date.now() - started }, true)),
    );
    // Catalog partitions over their split thresholds split on line (upkeep/split-partitions.ts).
    jobs.push(
      g.background
        .run(ctx, () => splitDuePartitions(g.catalog, g.config.partitions, { deadline: started + PARTITION_SPLIT_BUDGET_MS }))
        .then(
          (r) => {
            if (r.split.length || r.merged.length || r.failed.length || r.warned)
              logLine({ msg: 'partitions', ...r, ms: Date.now() - started }, r.failed.length > 0);
          },
          (err: unknown) => logLine({ msg: 'partitions', outcome: 'failed', error: errorMessage(err), ms: Date.now() - started }, true),
        ),
    );
    const fleetChanging = g.fleet.some((b) => b.state !== 'active' || b.rebalance);
    // The bucket list, read once for the jobs below that walk every bucket.
    let listed: Promise<string[]> | undefined;
    const bucketNames = () => (listed ??= g.catalog.listBucketRecords().then((r) => r.map((b) => b.name)));
    if (env.REPAIR_QUEUE) {
      // With a queue, the mover and the re-stripe run as chains of links (upkeep/move-chain.ts):
      // the cron starts one for each bucket with work that no chain owns.
      jobs.push(
        g.background
          .run(ctx, async () => {
            const buckets = fleetChanging ? await bucketNames() : (await g.restripeProgress()).filter((p) => !p.done).map((p) => p.bucket);
            const chains = buckets.length ? await startMoveChains(buckets, moveChainDeps(g, env)) : 0;
            if (chains) logLine({ msg: 'move-chains', started: chains, buckets: buckets.length, ms: Date.now() - started }, false);
          })
          .catch((err: unknown) => logLine({ msg: 'move-chains', outcome: 'failed', error: errorMessage(err), ms: Date.now() - started }, true)),
      );
    } else {
      // Without one, the cron runs a bounded batch of each itself.
      // The mover, while any backend is draining or retired, or being rebalanced onto (upkeep/drain.ts).
      if (fleetChanging) {
        jobs.push(
          g.background
            .run(ctx, () => g.drain({ maxMoves: DRAIN_MOVES_PER_RUN }, 'cron'))
            .catch((err: unknown) => logLine({ msg: 'drain', outcome: 'failed', error: errorMessage(err), ms: Date.now() - started }, true)),
        );
      }
      // The re-stripe, for buckets whose policy changed geometry (upkeep/restripe.ts): a few catalog
      // reads per bucket when there is nothing to rewrite.
      jobs.push(
        g.background
          .run(ctx, () => g.restripe({ maxVersions: RESTRIPE_VERSIONS_PER_RUN }, 'cron'))
          .catch((err: unknown) => logLine({ msg: 'restripe', outcome: 'failed', error: errorMessage(err), ms: Date.now() - started }, true)),
      );
    }
    // The adopted buckets' backfill (adopt/backfill-chain.ts): with a queue, a chain of links for
    // each bucket whose backfill wants runs and that no chain owns; without, a bounded batch here.
    const backfill = g.backfill;
    if (backfill) {
      jobs.push(
        g.background
          .run(ctx, async () => {
            // Write-through's source writes that failed (adopt/write-through.ts), retried first: clients' writes before the move's.
            const through = await backfill.syncWrites(WRITE_THROUGH_PER_RUN);
            if (through.synced + through.pending > 0) logLine({ msg: 'write-through', by: 'cron', ...through }, through.pending > 0);
            const { chainsStarted, reports } = await cronAdopt({
              buckets: () => backfill.buckets(),
              runAll: (o) => backfill.runAll(o),
              chain: g.adoptChain,
            });
            if (chainsStarted) logLine({ msg: 'adopt-chains', started: chainsStarted, ms: Date.now() - started }, false);
            for (const r of reports) {
              if (r.idle) continue;
              const { problems, ...counts } = r;
              logLine({ msg: 'adopt', by: 'cron', ...counts, ...(problems[0] ? { firstProblem: problems[0] } : {}), ms: Date.now() - started }, r.failed > 0);
            }
          })
          .catch((err: unknown) => logLine({ msg: 'adopt', outcome: 'failed', error: errorMessage(err), ms: Date.now() - started }, true)),
      );
    }
    // Server access logs due and not yet rolled by a request (upkeep/access-log.ts): one catalog
    // call per bucket (each may be a logging target).
    jobs.push(
      g.background
        .run(ctx, async () => {
          const n = await g.accessLogs.sweep(await bucketNames());
          if (n) logLine({ msg: 'access log', by: 'cron', delivered: n, ms: Date.now() - started });
        })
        .catch((err: unknown) => logLine({ msg: 'access log', outcome: 'failed', error: errorMessage(err), ms: Date.now() - started }, true)),
    );
    for (const job of jobs) ctx.waitUntil(job);
    ctx.waitUntil(g.background.run(ctx, () => wakeWorklists({ catalog: g.catalog, repair: g.repair, log: logLine }, !!env.REPAIR_QUEUE)));
    // After the upkeep: probe every backend (a backend back wakes every worklist), record a
    // data-health sample, flush the counts.
    ctx.waitUntil(
      Promise.allSettled(jobs)
        .then(() => g.background.run(ctx, () => g.ops.onCron()))
        .catch((err: unknown) => logLine({ msg: 'ops', outcome: 'failed', error: errorMessage(err) }, true)),
    );
  },
} satisfies ExportedHandler<Env, RepairTask | MoveLink | AdoptLink>;
