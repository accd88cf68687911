/**
 * The shared ops record as the gateway reaches it: the one OpsObject instance (ops-object.ts)
 * behind the OPS binding. Apart from the class so that code importing the gateway does not pull
 * in `cloudflare:workers` (Node tests build the gateway; only workerd runs the object).
 */
import type { OpsObject } from './ops-object.ts';
import type { OpsRecord, OpsSnapshot } from './types.ts';

/** The name of the one instance. */
export const OPS_INSTANCE = 'ops';

/** The record as the gateway reaches it: the one OpsObject instance behind the binding. */
export function durableOpsRecord(ns: DurableObjectNamespace<OpsObject>): OpsRecord {
  const stub = () => ns.get(ns.idFromName(OPS_INSTANCE));
  return {
    record: async (delta) => void (await stub().record(delta)),
    sample: async (s) => void (await stub().sample(s)),
    snapshot: async (sinceMs) => (await stub().snapshot(sinceMs)) as OpsSnapshot,
  };
}
