/**
 * Gateway: everything one isolate builds once from its env — parsed config, backends, the
 * catalog, the erasure-coded store and the Hono app — and repairNow, the repair queue's work
 * (the cron's garbage collector is ec/collector.ts). Rebuilt only if SHARDGATE_CONFIG changes.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Hono } from 'hono';
import { createBackend, type Backend } from '../backends/index.ts';
import { createApp } from './app.ts';
import { DurableCatalog } from './catalog/durable-catalog.ts';
import type { Catalog } from './catalog/types.ts';
import { parseConfig, type GatewayConfig } from './config.ts';
import { EcStore, type RepairTask } from './engine/ec-store.ts';
import { repairUnit, triageTargets } from './upkeep/repair.ts';
import { UnitStore } from './engine/unit-store.ts';
import { makeAuthenticate } from './auth-gate.ts';
import type { AppEnv, Authenticate } from './s3/context.ts';

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
  store: EcStore;
  app: Hono<AppEnv>;
  /** Sends a repair task to the queue (or repairs at once without one), kept alive by the current request. */
  enqueueRepair: (task: RepairTask) => void;
  /** The SigV4/SigV2 gate with the configured access keys. */
  authenticate: Authenticate;
}

let cached: { source: string; gateway: Gateway } | undefined;

/** The execution context of the request being served: background work (repair sends) must be
 *  kept alive by the request that started it, not by whichever request built the gateway. */
export const requestContext = new AsyncLocalStorage<{ waitUntil(p: Promise<unknown>): void }>();

export function gatewayFor(env: Env): Gateway {
  const source = env.SHARDGATE_CONFIG ?? '';
  if (cached?.source === source) return cached.gateway;
  if (!source) throw new Error('SHARDGATE_CONFIG is not set: see wrangler.toml [vars] and the README');
  const config = parseConfig(source);
  const backends = config.backends.map((b) => createBackend(b, env));
  const catalog = new DurableCatalog(env.CATALOG as never, { garbageGraceMs: config.garbageGraceSeconds * 1000 });
  const enqueueRepair = (task: RepairTask) => {
    // Sent on the next turn, not inside the PUT's commit path: workerd 2026-04-26 was seen to
    // crash (SIGSEGV) on a queue send made there; a deferred send is fine.
    const queue = env.REPAIR_QUEUE;
    const sent = new Promise((resolve) => setTimeout(resolve, 0)).then(async () => {
      if (queue) await queue.send(task);
      else await repairNow(gateway, task);
    });
    const settled = sent.catch((err: unknown) => console.error('shardgate: could not queue a repair', task, err));
    requestContext.getStore()?.waitUntil(settled);
  };
  const units = new UnitStore(backends, (bucket, key, unit, err) => {
    // The read goes on from other shards; the damaged one is fixed in the background.
    enqueueRepair({ bucket, key, unitId: unit.unitId, shards: [err.shardIndex], reason: `${err.reason}: ${err.message}` });
  }, { hedgeMs: config.readHedgeMs || undefined });
  const store = new EcStore({ catalog, units, config, enqueueRepair });
  const authenticate = makeAuthenticate(config, env);
  const app = createApp({
    store,
    authenticate,
    // A refused upload's unread body is drained (up to 64 MiB) before the error goes out, so the
    // client reads its error and wrangler dev's proxy does not wedge.
    config: { errorDrainBytes: 64 * 1024 * 1024, ...config.s3, region: config.region, maxObjectSize: config.maxObjectSize, baseDomains: config.baseDomains },
  });
  const gateway: Gateway = { config, backends, catalog, units, store, app, enqueueRepair, authenticate };
  cached = { source, gateway };
  return gateway;
}

/**
 * Repairs one task: finds the unit in the object's current manifest (gone units need nothing),
 * rewrites the shards that need it and records them repaired; throws (the queue retries later)
 * while some shard's backend is still unreachable or a rewrite failed.
 */
export async function repairNow(g: Gateway, task: RepairTask): Promise<void> {
  const manifest = task.key ? await g.catalog.getObject(task.bucket, task.key) : null;
  const unit = manifest?.storage.kind === 'coded' ? manifest.storage.units.find((u) => u.unitId === task.unitId) : undefined;
  if (!unit) return;
  const { now, later } = await triageTargets(task.bucket, unit, task.shards, task.reason.startsWith('unavailable'), g.units.byId);
  const fine = task.shards.filter((t) => !now.includes(t) && !later.includes(t));
  const result = now.length ? await repairUnit(task.bucket, unit, now, g.units.byId) : { repaired: [], failed: [] };
  const repaired = [...fine, ...result.repaired].filter((t) => unit.missing.includes(t));
  if (repaired.length) await g.catalog.markRepaired(task.bucket, task.key, unit.unitId, repaired);
  if (result.failed.length || later.length) {
    throw new Error(`repair of ${task.bucket}/${task.key} unit ${task.unitId}: ${JSON.stringify({ failed: result.failed, unreachable: later })}`);
  }
}
