/**
 * `shardgate cost --transition` (issue 44): keeping a bucket on one storage class against a
 * lifecycle rule that moves it to another after N days, from the price list, over a horizon.
 * Each class is a scheme (k+m or replicas) on its providers, priced by the calculator's own model
 * (model.ts costOf: storage, the reads of the workload, its PUTs):
 * - keep: the hot class's month, every month of the horizon;
 * - lifecycle: the hot class's month for the first N days, the move, then the cold class's month
 *   for the rest. The move is what the re-striper does: it reads the bucket once through the hot
 *   class (k cheapest shards: their egress and one GET each per object) and writes it under the
 *   cold one (k+m PUTs per object), priced as a month of that traffic on each side;
 * - the day the lifecycle starts paying off (the move's cost made back by the cheaper months),
 *   or never when the cold class is not cheaper per month.
 * A month is 30 days. The bucket is the workload of the command (--stored GB in --objects
 * objects, --read GB read per month, --gets, --puts): its data is taken as written at the start
 * (a bucket written continuously has only its part older than N days on the cold class); reads
 * are served by whichever class holds the data; --puts (new writes) are the hot class's all
 * along. Not modelled: the old shards' DELETEs (free on every provider priced here), minimum
 * storage durations and per-object minimums of archive tiers (they are the backends' terms, not
 * the gateway's: a cold class here reads at once, no restore).
 */
import { costOf, type CostRow, type Provider, type Scheme, type Workload } from './model.ts';
import { dollars } from './table.ts';

export const DAYS_PER_MONTH = 30;

export interface TransitionPlan {
  hot: { scheme: Scheme; providers: Provider[] };
  cold: { scheme: Scheme; providers: Provider[] };
  afterDays: number;
  months: number;
}

export interface TransitionComparison {
  afterDays: number;
  months: number;
  hot: { scheme: string; providers: string[]; perMonth: CostRow };
  cold: { scheme: string; providers: string[]; perMonth: CostRow };
  /** The bucket kept on the hot class for the whole horizon. */
  keep: { total: number };
  /** Moved after `afterDays`: its parts and total over the horizon. */
  lifecycle: { beforeMove: number; move: { egress: number; requests: number; total: number }; afterMove: number; total: number };
  /** keep - lifecycle over the horizon (negative: the lifecycle costs more). */
  saving: number;
  /** The day from which the lifecycle has cost less in all (null: never, the cold class's month is not cheaper). */
  breakEvenDay: number | null;
}

export function compareTransition(plan: TransitionPlan, w: Workload): TransitionComparison {
  const hot = costOf(plan.hot.providers, plan.hot.scheme, w);
  // New writes stay the hot class's: the cold class's month has the reads only.
  const cold = costOf(plan.cold.providers, plan.cold.scheme, { ...w, putsPerMonth: 0 });
  for (const [what, row] of [
    ['the hot class', hot],
    ['the cold class', cold],
  ] as const) {
    if (!row.feasible) throw new Error(`${what} (${row.scheme.name}): not placeable: ${row.reason}`);
  }
  const horizonDays = plan.months * DAYS_PER_MONTH;
  const moveDay = Math.min(plan.afterDays, horizonDays);
  const perDay = (row: CostRow) => row.total / DAYS_PER_MONTH;
  // The move: the bucket read once through the hot class, written once under the cold one.
  const read = costOf(plan.hot.providers, plan.hot.scheme, {
    storedGB: 0,
    readGBPerMonth: w.storedGB,
    objects: w.objects,
    putsPerMonth: 0,
    getsPerMonth: w.objects,
  });
  const write = costOf(plan.cold.providers, plan.cold.scheme, { storedGB: 0, readGBPerMonth: 0, objects: w.objects, putsPerMonth: w.objects, getsPerMonth: 0 });
  const moved = plan.afterDays < horizonDays;
  const move = moved
    ? { egress: read.egress + write.egress, requests: read.requests + write.requests, total: read.total + write.total }
    : { egress: 0, requests: 0, total: 0 };
  // New writes (--puts) stay on the hot class after the move too.
  const hotPutsPerDay = (hot.total - costOf(plan.hot.providers, plan.hot.scheme, { ...w, putsPerMonth: 0 }).total) / DAYS_PER_MONTH;
  const beforeMove = perDay(hot) * moveDay;
  const afterMove = (perDay(cold) + hotPutsPerDay) * (horizonDays - moveDay);
  const lifecycleTotal = beforeMove + move.total + afterMove;
  const keepTotal = perDay(hot) * horizonDays;
  const dailySaving = perDay(hot) - perDay(cold) - hotPutsPerDay;
  return {
    afterDays: plan.afterDays,
    months: plan.months,
    hot: { scheme: plan.hot.scheme.name, providers: plan.hot.providers.map((p) => p.name), perMonth: hot },
    cold: { scheme: plan.cold.scheme.name, providers: plan.cold.providers.map((p) => p.name), perMonth: cold },
    keep: { total: keepTotal },
    lifecycle: { beforeMove, move, afterMove, total: lifecycleTotal },
    saving: keepTotal - lifecycleTotal,
    breakEvenDay: dailySaving > 0 ? plan.afterDays + Math.ceil(move.total / dailySaving) : null,
  };
}

export function transitionTable(c: TransitionComparison, w: Workload, asOf: string): string {
  const month = (r: CostRow) => `${dollars(r.total)}/month (storage ${dollars(r.storage)}, reads ${dollars(r.egress + r.requests)})`;
  const lines = [
    `workload: ${w.storedGB} GB stored in ${w.objects} objects; ${w.readGBPerMonth} GB read per month in ${w.getsPerMonth} GETs; ${w.putsPerMonth} PUTs per month`,
    `prices as of ${asOf} (list prices, no free tiers); a month is ${DAYS_PER_MONTH} days`,
    '',
    `hot class:  ${c.hot.scheme} on ${c.hot.providers.join(', ')}: ${month(c.hot.perMonth)}`,
    `cold class: ${c.cold.scheme} on ${c.cold.providers.join(', ')}: ${month(c.cold.perMonth)}`,
    '',
    `over ${c.months} month(s):`,
    `  keep on ${c.hot.scheme}: ${dollars(c.keep.total)}`,
    `  move to ${c.cold.scheme} after ${c.afterDays} day(s): ${dollars(c.lifecycle.total)} (${dollars(c.lifecycle.beforeMove)} before, the move ${dollars(c.lifecycle.move.total)}: egress ${dollars(c.lifecycle.move.egress)}, requests ${dollars(c.lifecycle.move.requests)}; ${dollars(c.lifecycle.afterMove)} after)`,
    c.saving >= 0 ? `  the lifecycle saves ${dollars(c.saving)}` : `  the lifecycle costs ${dollars(-c.saving)} more`,
    c.breakEvenDay === null
      ? `  it never pays off: ${c.cold.scheme} on those providers is not cheaper per month`
      : `  it has paid for its move from day ${c.breakEvenDay}`,
  ];
  return lines.join('\n');
}
