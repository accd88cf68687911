/**
 * The `repairs` section of SHARDGATE_CONFIG as the catalog reads it (catalog/sql-repairs.ts): how
 * a bucket's repair worklist backs off and when it hands a unit on again. Its schema, with the
 * same defaults, is config.ts `repairs` (the gateway refuses to start on a section it does not
 * accept); the catalog's Durable Object reads it from its env here, once per config text.
 * Operators shorten it for a backend pool that recovers fast, lengthen it for one whose outages
 * last; tests run the worklist's whole life in seconds with it instead of waiting 40.
 */
export interface RepairTiming {
  /** A unit's first retry after a failed repair; doubling from there. */
  retryFirstMs: number;
  /** The longest a unit (or a backend that does not answer) waits between tries. */
  retryMaxMs: number;
  /** A unit handed to the queue and not reported back within this is handed on again. */
  resendAfterMs: number;
}

export const REPAIR_TIMING_DEFAULTS: RepairTiming = { retryFirstMs: 1000, retryMaxMs: 10_000, resendAfterMs: 30_000 };

let cached: { text: string | undefined; timing: RepairTiming } | undefined;

/** The section as the catalog reads it from its env (the same SHARDGATE_CONFIG the gateway has): defaults where absent. */
export function repairTimingOf(env: { SHARDGATE_CONFIG?: string }): RepairTiming {
  const text = env.SHARDGATE_CONFIG;
  if (cached && cached.text === text) return cached.timing;
  let timing = REPAIR_TIMING_DEFAULTS;
  try {
    const raw = text ? (JSON.parse(text) as { repairs?: Partial<RepairTiming> }).repairs : undefined;
    if (raw && typeof raw === 'object') timing = { ...REPAIR_TIMING_DEFAULTS, ...raw };
  } catch {
    // not JSON: the gateway refuses it with the reason, and serves nothing
  }
  cached = { text, timing };
  return timing;
}
