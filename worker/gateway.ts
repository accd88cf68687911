/**
 * The composition root: everything one isolate builds once from its env. Parsed config ->
 * backends, catalog, unit store and erasure-coded store -> the Hono app (with the status route
 * and the admin sub-app), plus the repair sender. No logic of its own beyond the wiring; rebuilt
 * only if SHARDGATE_CONFIG changes. Deployed (no local-development signal, deployment.ts), the
 * config is reviewed first: refused, the isolate serves only the refusal (refusal.ts).
 */
import type { Hono } from 'hono';
import { createBackend, type Backend } from '../backends/index.ts';
import { activeKernel, checksums } from '../coder-wasm/index.ts';
import { createAdmin } from './admin.ts';
import { createApp } from './app.ts';
import { makeAuthenticate } from './auth-gate.ts';
import { BackgroundWork } from './background.ts';
import { DurableCatalog } from './catalog/durable-catalog.ts';
import type { Catalog } from './catalog/types.ts';
import { engineSettings, parseConfig, priceBook, s3Settings, type GatewayConfig } from './config.ts';
import { isLocalDevelopment, reviewDeployment, type DeploymentReview } from './deployment.ts';
import { BackendTraffic } from './engine/backend-traffic.ts';
import { EcStore, type RepairTask } from './engine/ec-store.ts';
import { UnitStore } from './engine/unit-store.ts';
import { logRefusal, refusingApp } from './refusal.ts';
import type { AppEnv } from './s3/context.ts';
import { runRepair } from './upkeep/repair.ts';

export interface Env {
  SHARDGATE_CONFIG?: string;
  CATALOG: DurableObjectNamespace;
  REPAIR_QUEUE?: Queue<RepairTask>;
  [binding: string]: unknown;
}

export interface Gateway {
  config: GatewayConfig;
  backends: Backend[];
  catalog: Catalog;
  units: UnitStore;
  /** What this isolate has asked of each backend (the cost report's traffic). */
  traffic: BackendTraffic;
  store: EcStore;
  app: Hono<AppEnv>;
  background: BackgroundWork;
  /** Sends a repair task to the queue (or repairs at once without one), kept alive by the current request. */
  enqueueRepair: (task: RepairTask) => void;
  /** The repair queue's work for one task. */
  repair: (task: RepairTask) => Promise<void>;
}

/** A built gateway, or, deployed with a config the review refuses, the app that refuses everything. */
type Startup = { gateway: Gateway; refused?: undefined } | { gateway?: undefined; refused: { app: Hono<AppEnv>; review: DeploymentReview } };

let cached: { source: string; local: boolean; startup: Startup } | undefined;

function startup(env: Env): Startup {
  const source = env.SHARDGATE_CONFIG ?? '';
  const local = isLocalDevelopment(env);
  if (cached?.source === source && cached.local === local) return cached.startup;
  if (!source) throw new Error('SHARDGATE_CONFIG is not set: see wrangler.toml [vars] and the README');
  const config = parseConfig(source);
  // Deployed (no local-development signal): refuse what is only safe on a laptop (deployment.ts).
  const review = local ? { refusals: [], warnings: [] } : reviewDeployment(config, env);
  for (const w of review.warnings) console.warn(`shardgate: WARNING: ${w}`);
  let result: Startup;
  if (review.refusals.length) {
    logRefusal(review);
    result = { refused: { app: refusingApp(review, config), review } };
  } else {
    result = { gateway: buildGateway(config, env, local ? 'local' : 'deployed', review.warnings) };
  }
  cached = { source, local, startup: result };
  return result;
}

/** The app that answers this env's requests: the gateway's, or the refusal's. */
export function appFor(env: Env): Hono<AppEnv> {
  const s = startup(env);
  return s.gateway ? s.gateway.app : s.refused.app;
}

/** The gateway of this env (queue, cron, tests); throws when a deployed config was refused. */
export function gatewayFor(env: Env): Gateway {
  const s = startup(env);
  if (s.gateway) return s.gateway;
  throw new Error(`shardgate refuses to run: ${s.refused.review.refusals.length} configuration problem(s), logged when the isolate started`);
}

function buildGateway(config: GatewayConfig, env: Env, mode: 'local' | 'deployed', warnings: string[]): Gateway {
  const backends = config.backends.map((b) => createBackend(b, env));
  // Everything the gateway asks of a backend goes through the traffic meter (cost report);
  // `backends` stays the bare ones (tests reach their fault wrappers there).
  const traffic = new BackendTraffic();
  const metered = backends.map((b) => traffic.wrap(b));
  const catalog = new DurableCatalog(env.CATALOG as never, { garbageGraceMs: config.garbageGraceSeconds * 1000 });
  const background = new BackgroundWork();
  const repair = (task: RepairTask) => runRepair(task, { catalog, backends: units.byId });
  const enqueueRepair = (task: RepairTask) => {
    // Sent on the next turn, not inside the PUT's commit path: workerd 2026-04-26 was seen to
    // crash (SIGSEGV) on a queue send made there; a deferred send is fine.
    const queue = env.REPAIR_QUEUE;
    const sent = new Promise((resolve) => setTimeout(resolve, 0)).then(async () => {
      if (queue) await queue.send(task);
      else await repair(task);
    });
    background.keepAlive(sent.catch((err: unknown) => console.error('shardgate: could not queue a repair', task, err)));
  };
  const units = new UnitStore(metered, (bucket, key, unit, err) => {
    // The read goes on from other shards; the damaged one is fixed in the background.
    enqueueRepair({ bucket, key, unitId: unit.unitId, shards: [err.shardIndex], reason: `${err.reason}: ${err.message}` });
  }, { hedgeMs: config.readHedgeMs || undefined, prices: priceBook(config) });
  const store = new EcStore({ catalog, units, settings: engineSettings(config), enqueueRepair });
  const authenticate = makeAuthenticate(config, env);
  const app = createApp({
    store,
    authenticate,
    settings: s3Settings(config),
    around: (c, next) => background.run(c.executionCtx, next),
    status: () => ({
      service: 'shardgate',
      coder: { kernel: activeKernel(), crc32: checksums().crc32Impl },
      backends: backends.map((b) => ({ id: b.id, domain: b.domain })),
      policies: config.policies,
      defaultPolicy: config.defaultPolicy,
      deployment: { mode, warnings },
    }),
    admin: createAdmin({
      authenticate, catalog, backends: metered, region: config.region, scrub: config.scrub, enqueueRepair,
      costs: { traffic, prices: config.backendPrices },
    }),
  });
  return { config, backends, catalog, units, traffic, store, app, background, enqueueRepair, repair };
}
