/**
 * BudgetGauge: one isolate's coding budget as an observer sees it. The engine measures it
 * (engine/coding-budget.ts `snapshot()`), ops reports it (status, metrics, `shardgate status`);
 * the shape lives here, below both, because neither room may import the other.
 */
export interface BudgetGauge {
  capacityBytes: number;
  heldBytes: number;
  holders: number;
  waiters: number;
  waitingBytes: number;
  /** Age of the oldest lease still held, ms; null when none is. */
  oldestHeldMs: number | null;
  /** Leases reclaimed from holders that ended without releasing them (each one a bug, logged). */
  reclaimed: number;
  /** Leases held now, oldest first, at most 20: holder, bytes, age. */
  leases: { holder: string; bytes: number; ageMs: number }[];
}
