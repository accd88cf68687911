/**
 * The gateway's health as named checks, each with a state and one line of what to do, derived
 * from the status (issue 27): the overall health is the worst of them.
 * - writes (per policy): fewer backends reachable than the policy's write quorum means every
 *   write of that policy is refused: critical.
 * - reads (per policy): more backends down than its m means some objects cannot be read: critical.
 * - backends: a backend down or degraded: warning (reads decode around it; writes miss its shards).
 * - repairs: degraded objects waiting for repair (warning), units stuck after 8 attempts (warning).
 * - redundancy: units recorded with fewer than k shards, data lost (critical); with exactly k,
 *   reads at risk (warning: they read, one more loss loses them). With a policy's m backends down
 *   its reads are at risk too (reads:POLICY, warning): units with a shard on each have exactly k.
 * - fleet (issue 26): a retired backend the catalog still records shards on: critical (those
 *   shards are read as missing until the mover has rebuilt them elsewhere); a draining backend
 *   with shards left: warning, naming how many.
 * - journal: catalog changes not yet stored on the backends for longer than JOURNAL_LATE_MS (the
 *   cron stores them every minute): warning; longer than JOURNAL_CRITICAL_MS: critical. Losing
 *   the catalog now would lose that much (inline objects, versions, settings).
 * - journal-redundancy (issue 37): the journal's segment files with fewer than k shards recorded
 *   (critical: that part of the recovery point is gone), with exactly k, or with shards still on
 *   draining or retired backends (warning: the journal's upkeep repairs and moves them).
 * - catalog-lost (issue 37): the backends hold a journal the catalog does not know (a bucket it
 *   lacks, or one whose catalog is behind its journal: upkeep/catalog-loss.ts): critical, with
 *   counts only (bucket names only through the signed admin API: shardgate rebuild --lost).
 * - partitions (issue 39): a bucket's catalog partition past warnFraction of a split threshold
 *   (config `partitions`): warning (the cron splits one over a threshold on line; one that cannot
 *   split, a single key's versions, stays). A partition's database past 80% of the 10 GB a Durable
 *   Object holds: critical, whatever the thresholds (writes there fail at the limit).
 * "Reachable" is every backend not known down (a backend never called yet counts as reachable:
 * its first call tells).
 */
import type { BackendHealth } from './health.ts';
import { splitFraction, type SplitMeasures, type SplitThresholds } from '../model/split-thresholds.ts';

export type CheckState = 'ok' | 'warning' | 'critical';

export interface HealthCheck {
  /** A stable name: "writes:POLICY", "reads:POLICY", "backends", "repairs", "redundancy". */
  name: string;
  state: CheckState;
  /** What is wrong (or right), one line. */
  detail: string;
  /** What to do about it, one line; absent when ok. */
  action?: string;
}

export interface CheckedPolicy {
  codec: string;
  k: number;
  m: number;
  /** Shards a write must store; absent: k, the least any write needs. */
  writeQuorum?: number;
}

const RANK: Record<CheckState, number> = { ok: 0, warning: 1, critical: 2 };

export function worstOf(checks: readonly HealthCheck[]): CheckState {
  return checks.reduce<CheckState>((w, c) => (RANK[c.state] > RANK[w] ? c.state : w), 'ok');
}

export function healthChecks(o: {
  backends: readonly (Pick<BackendHealth, 'id' | 'state'> & { maintenance?: boolean })[];
  policies: Readonly<Record<string, CheckedPolicy>>;
  degradedObjects: number;
  repairStuck: number;
  /** Units recorded with exactly k shards left, and with fewer (absent: 0). */
  unitsAtRisk?: number;
  unitsLost?: number;
}): HealthCheck[] {
  // A backend in maintenance is down for what the fleet can do (writes, reads) but raises no warning of its own.
  const maintenance = o.backends.filter((b) => b.maintenance);
  const down = o.backends.filter((b) => b.state === 'down' || b.maintenance);
  const noisyDown = down.filter((b) => !b.maintenance);
  const degraded = o.backends.filter((b) => b.state === 'degraded' && !b.maintenance);
  const reachable = o.backends.length - down.length;
  const downIds = down.map((b) => b.id).join(', ');
  const checks: HealthCheck[] = [];
  for (const [name, p] of Object.entries(o.policies)) {
    const quorum = p.writeQuorum ?? p.k;
    checks.push(
      reachable < quorum
        ? {
            name: `writes:${name}`,
            state: 'critical',
            detail: `writes of policy ${name} are impossible: ${reachable} backend(s) reachable, its write quorum is ${quorum}`,
            action: `bring back backends (down: ${downIds}): every write of ${name} is refused until ${quorum} are reachable`,
          }
        : { name: `writes:${name}`, state: 'ok', detail: `${reachable} backend(s) reachable for a write quorum of ${quorum}` },
    );
    checks.push(
      down.length > p.m
        ? {
            name: `reads:${name}`,
            state: 'critical',
            detail: `${down.length} backend(s) down, more than policy ${name}'s m=${p.m}: objects with more than ${p.m} shards there cannot be read`,
            action: `bring back backends (down: ${downIds}); no repair can run until then`,
          }
        : down.length === p.m && p.m > 0
          ? {
              name: `reads:${name}`,
              state: 'warning',
              detail: `reads of policy ${name} are at risk: ${down.length} backend(s) down, its m=${p.m}; objects with a shard on each of them have exactly k left`,
              action: `bring back backends (down: ${downIds}): one more lost backend makes those objects unreadable`,
            }
          : { name: `reads:${name}`, state: 'ok', detail: `${down.length} backend(s) down, policy ${name} tolerates ${p.m}` },
    );
  }
  const inMaintenance = maintenance.length ? `; in maintenance (known down, no warning): ${maintenance.map((b) => b.id).join(', ')}` : '';
  checks.push(
    noisyDown.length || degraded.length
      ? {
          name: 'backends',
          state: 'warning',
          detail:
            [
              noisyDown.length ? `down: ${noisyDown.map((b) => b.id).join(', ')}` : '',
              degraded.length ? `degraded (failing calls): ${degraded.map((b) => b.id).join(', ')}` : '',
            ]
              .filter(Boolean)
              .join('; ') + inMaintenance,
          action: 'check the backend (its last error: shardgate status with an admin key); reads decode around it, writes miss its shards until it is back',
        }
      : {
          name: 'backends',
          state: 'ok',
          detail: maintenance.length ? `every backend not in maintenance reachable and answering${inMaintenance}` : 'every backend reachable and answering',
        },
  );
  checks.push(
    o.repairStuck > 0
      ? {
          name: 'repairs',
          state: 'warning',
          detail: `${o.degradedObjects} degraded object(s); ${o.repairStuck} unit(s) stuck after 8 repair attempts`,
          action: 'npx shardgate repair --list --stuck says which units and why (usually a backend still down)',
        }
      : o.degradedObjects > 0
        ? {
            name: 'repairs',
            state: 'warning',
            detail: `${o.degradedObjects} degraded object(s) waiting for repair`,
            action: 'repairs run on their own once the backends answer; npx shardgate repair runs them now',
          }
        : { name: 'repairs', state: 'ok', detail: 'no degraded objects' },
  );
  const atRisk = o.unitsAtRisk ?? 0,
    lost = o.unitsLost ?? 0;
  checks.push(
    lost > 0
      ? {
          name: 'redundancy',
          state: 'critical',
          detail: `data lost: ${lost} unit(s) have fewer than k shards${atRisk ? `; ${atRisk} more have exactly k` : ''}`,
          action: 'bring back the backends that held their shards (npx shardgate repair --list names the units); no repair can rebuild a unit below k',
        }
      : atRisk > 0
        ? {
            name: 'redundancy',
            state: 'warning',
            detail: `reads at risk: ${atRisk} unit(s) have exactly k shards left`,
            action: 'let repair run (npx shardgate repair runs it now; it takes these units first): one more lost shard makes them unreadable',
          }
        : { name: 'redundancy', state: 'ok', detail: 'no unit with k shards or fewer (shards on unreachable backends count as missing)' },
  );
  return checks;
}

/** A configured backend's place in the fleet and the shard files the catalog records there. */
export interface FleetEntry {
  id: string;
  state: 'active' | 'draining' | 'retired';
  shards: number;
  bytes: number;
}

/**
 * The fleet check: a retired backend may hold no shard the catalog still records (the count is only
 * known from the catalog: `shardgate check-deploy --endpoint` and `npm start` refuse such a config
 * before it runs, cli/deploy/live-fleet.ts; a deployed gateway given it anyway answers, and this
 * check is critical, naming the count), and a draining one says
 * what is left. Ok when every backend is active, or every leaving one is empty.
 */
export function fleetCheck(backends: readonly FleetEntry[]): HealthCheck {
  const retired = backends.filter((b) => b.state === 'retired' && b.shards > 0);
  const draining = backends.filter((b) => b.state === 'draining');
  const leftOn = (b: FleetEntry) => `${b.id}: ${b.shards} shard file(s), ${b.bytes} bytes`;
  if (retired.length) {
    return {
      name: 'fleet',
      state: 'critical',
      detail: `retired backend(s) still hold shards the catalog records: ${retired.map(leftOn).join('; ')}`,
      action: `mark ${retired.map((b) => b.id).join(', ')} "draining" again until shardgate drain shows 0 left (a retired backend is never read: those shards count as missing)`,
    };
  }
  const busy = draining.filter((b) => b.shards > 0);
  if (busy.length)
    return {
      name: 'fleet',
      state: 'warning',
      detail: `draining: ${busy.map(leftOn).join('; ')}`,
      action: 'the cron moves them off; shardgate drain shows progress, rate and time remaining',
    };
  const done = [...draining, ...backends.filter((b) => b.state === 'retired')];
  return {
    name: 'fleet',
    state: 'ok',
    detail: done.length ? `no shards left on ${done.map((b) => `${b.id} (${b.state})`).join(', ')}` : 'every backend active',
  };
}

/** The journal is late past this (its cron runs every minute): warning; past the second, critical. */
export const JOURNAL_LATE_MS = 3 * 60_000;

/** Where the cron comes from locally: wrangler.toml's [triggers] never fire under wrangler dev. */
const LOCAL_CRON_ACTION =
  "check that the local cron runs (npm start calls the scheduled handler every --cron-seconds, 60 s by default, none with 0; its 'cron:' lines in that console say why a run failed or timed out)";
export const JOURNAL_CRITICAL_MS = 15 * 60_000;

export interface JournalEntry {
  /** A bucket's name, or the bucket list. */
  name: string;
  /** Changes not yet stored, or a dump in progress. */
  behind: boolean;
  /** When the newest stored segment was taken; null: none yet. */
  storedAt: number | null;
}

/**
 * The catalog journal's recovery point: the oldest last-stored segment among instances with
 * changes waiting. An instance with no segment stored yet is counted but not judged late (its
 * changes' age is not known; the journal's own failures show in its runs' logs and counters).
 * `named`: the late instances are named (a signed status); the unsigned one counts them, since
 * an instance is named by its bucket (issue 37).
 */
export function journalCheck(entries: readonly JournalEntry[], now: number, mode: 'local' | 'deployed' = 'deployed', named = true): HealthCheck {
  const waiting = entries.filter((e) => e.behind && e.storedAt !== null);
  const oldest = waiting.reduce<number | null>((t, e) => (t === null || e.storedAt! < t ? e.storedAt : t), null);
  const age = oldest === null ? 0 : now - oldest;
  const fresh = entries.filter((e) => e.behind && e.storedAt === null).length;
  const tail = fresh ? `; ${fresh} catalog instance(s) with changes not journaled yet` : '';
  if (age > JOURNAL_LATE_MS) {
    const late = waiting.filter((e) => now - e.storedAt! > JOURNAL_LATE_MS).map((e) => e.name);
    const which = named ? late.join(', ') : `${late.length} catalog instance(s)`;
    return {
      name: 'journal',
      state: age > JOURNAL_CRITICAL_MS ? 'critical' : 'warning',
      detail: `catalog changes of the last ${Math.round(age / 60_000)} min are not on the backends (${which})${tail}: losing the catalog now would lose them`,
      action: `${mode === 'local' ? LOCAL_CRON_ACTION : 'check that the cron runs (wrangler.toml [triggers])'} and the journal runs' logs (msg "journal"); shardgate journal stores them now`,
    };
  }
  return {
    name: 'journal',
    state: 'ok',
    detail: `catalog journal on the backends${oldest === null ? '' : ` (recovery point ${Math.round(age / 1000)} s)`}${tail}`,
  };
}

/** The catalog-loss record as the check counts it (catalog/types.ts CatalogLoss). */
export interface LossCounts {
  /** Buckets the catalog lacks, and buckets whose catalog is behind their journal. */
  unknown: number;
  behind: number;
  /** The bucket list itself is behind its journal (the whole catalog was lost). */
  bucketList: boolean;
  /** Buckets the catalog lacks seen once (confirmed a minute later, or gone). */
  suspect: number;
}

/** Critical while any journal instance on the backends is ahead of the catalog: never names a bucket. */
export function catalogLossCheck(c: LossCounts): HealthCheck {
  const buckets = c.unknown + c.behind;
  if (!buckets && !c.bucketList) {
    return {
      name: 'catalog-lost',
      state: 'ok',
      detail: c.suspect
        ? `the backends hold journal segments of ${c.suspect} bucket(s) the catalog lacks: being confirmed (a deleted bucket's, being collected, look the same)`
        : 'the catalog knows every journal segment on the backends',
    };
  }
  const parts = [
    c.unknown ? `${c.unknown} bucket(s) the catalog lacks` : '',
    c.behind ? `${c.behind} bucket(s) whose catalog is behind it` : '',
    c.bucketList ? 'the bucket list (the whole catalog was lost)' : '',
  ].filter(Boolean);
  return {
    name: 'catalog-lost',
    state: 'critical',
    detail: `the backends hold a catalog journal newer than this catalog: ${parts.join(', ')}; writes to those buckets are refused and their journal is paused`,
    action:
      'shardgate rebuild --lost names them; shardgate rebuild --bucket NAME restores each from its journal (and merges writes made since), or shardgate rebuild --discard NAME gives that journal up',
  };
}

/** The journal's own redundancy (status.ts journalSummary). */
export function journalRedundancyCheck(j: { units: number; atRisk: number; lost: number; shardsOnLeavingBackends: number }): HealthCheck {
  if (j.lost > 0) {
    return {
      name: 'journal-redundancy',
      state: 'critical',
      detail: `${j.lost} catalog journal unit(s) have fewer than k shards${j.atRisk ? `; ${j.atRisk} more have exactly k` : ''}: a lost catalog could not be rebuilt from them`,
      action: 'bring back the backends that held their shards; the journal writes a new full generation on its own (shardgate journal runs it now)',
    };
  }
  if (j.atRisk > 0 || j.shardsOnLeavingBackends > 0) {
    const parts = [
      j.atRisk ? `${j.atRisk} catalog journal unit(s) have exactly k shards` : '',
      j.shardsOnLeavingBackends ? `${j.shardsOnLeavingBackends} journal shard file(s) on draining or retired backends` : '',
    ].filter(Boolean);
    return {
      name: 'journal-redundancy',
      state: 'warning',
      detail: parts.join('; '),
      action: "the journal's upkeep repairs and moves them on the cron; shardgate journal --upkeep runs it now",
    };
  }
  return { name: 'journal-redundancy', state: 'ok', detail: `${j.units} catalog journal unit(s), none below full redundancy` };
}

/** A Durable Object holds at most this much SQLite (Cloudflare's published limit, paid plan). */
export const DURABLE_OBJECT_BYTES = 10 * 1024 ** 3;

export function partitionCheck(buckets: readonly { bucket: string; partitions?: readonly SplitMeasures[] }[], t: SplitThresholds, named: boolean): HealthCheck {
  const fraction = (p: SplitMeasures) => splitFraction(p, t);
  const all = buckets.flatMap((b) => (b.partitions ?? []).map((p) => ({ bucket: b.bucket, p })));
  const full = all.filter(({ p }) => p.databaseBytes >= 0.8 * DURABLE_OBJECT_BYTES);
  const over = all.filter(({ p }) => fraction(p) >= 1);
  const near = all.filter(({ p }) => fraction(p) >= t.warnFraction && fraction(p) < 1);
  const names = (xs: typeof all) => (named ? ` (${[...new Set(xs.map((x) => x.bucket))].join(', ')})` : '');
  const split = buckets.filter((b) => (b.partitions?.length ?? 0) > 1).length;
  const base = `${all.length} catalog partitions in ${buckets.length} buckets (${split} split)`;
  if (full.length) {
    return {
      name: 'partitions',
      state: 'critical',
      detail: `${full.length} partitions hold over 80% of the 10 GB a Durable Object can${names(full)}`,
      action: 'split them now: shardgate partitions BUCKET --split KEY (writes there fail at the limit)',
    };
  }
  if (!over.length && !near.length)
    return { name: 'partitions', state: 'ok', detail: `${base}, each under ${Math.round(t.warnFraction * 100)}% of the split thresholds` };
  return {
    name: 'partitions',
    state: 'warning',
    detail: `${base}: ${over.length} over a split threshold, ${near.length} past ${Math.round(t.warnFraction * 100)}% of one${names([...over, ...near])}`,
    action: t.autoSplit
      ? 'the cron splits those over a threshold on line; shardgate partitions BUCKET shows each'
      : 'automatic splits are off (config partitions.autoSplit): shardgate partitions BUCKET --split KEY',
  };
}

/**
 * The adopted buckets' moves (issue 41, docs/ADOPTION.md): whether each is complete, so the status
 * says when a source may be detached. A warning when a bucket's last pass had failures (the next
 * pass retries them). Bucket names only in the signed status (`named`).
 */
export function adoptCheck(
  progress: readonly { bucket: string; phase: string; complete: boolean; last: { failed: number } | null }[],
  named: boolean,
): HealthCheck {
  const names = (xs: readonly { bucket: string }[]) => (named && xs.length ? ` (${xs.map((x) => x.bucket).join(', ')})` : '');
  const detached = progress.filter((p) => p.phase === 'detached');
  const complete = progress.filter((p) => p.complete && p.phase !== 'detached');
  const moving = progress.filter((p) => !p.complete && p.phase !== 'detached');
  const failing = progress.filter((p) => p.phase !== 'detached' && (p.last?.failed ?? 0) > 0);
  const detail =
    `${progress.length} bucket(s) with a source: ${complete.length} moved in, source still attached${names(complete)}; ` +
    `${moving.length} not yet complete${names(moving)}; ${detached.length} detached${names(detached)}`;
  if (failing.length)
    return {
      name: 'adoption',
      state: 'warning',
      detail: `${detail}; objects failed to adopt in the last pass${names(failing)}`,
      action: 'shardgate adopt --status shows the last problem; the next pass retries them',
    };
  return { name: 'adoption', state: 'ok', detail };
}
