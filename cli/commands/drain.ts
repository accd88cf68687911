/**
 * `shardgate drain`: moving shards off a backend (issue 26). The backend's `state` in the config
 * says what happens (docs/OPERATING.md "Changing the fleet"); this command prices it first and
 * shows or drives the progress:
 *   shardgate drain --estimate BACKEND   POST /_shardgate/admin/drain-estimate: GETs, PUTs, DELETEs
 *                                        and egress per backend at the configured prices
 *   shardgate drain --estimate --rebalance BACKEND   the same for a rebalance onto BACKEND
 *   shardgate drain [BACKEND]            POST /_shardgate/admin/drain-status: left, moved, rate, ETA
 *   shardgate drain --run [BACKEND]      POST /_shardgate/admin/drain until nothing is left (or a
 *                                        run moves nothing: exit 1 with why)
 */
import { parseArgs } from 'node:util';
import { CliError, type Command } from '../command.ts';
import { bytes, duration, printJson, table } from '../format.ts';
import { GATEWAY_HELP, GATEWAY_OPTIONS, GatewayClient } from '../gateway-client.ts';

const HELP = `usage: shardgate drain --estimate [--rebalance] BACKEND [--json] [gateway options]
       shardgate drain [BACKEND] [--json] [gateway options]
       shardgate drain --run [BACKEND] [--batch N] [--json] [gateway options]

A backend marked "draining" in the config takes no new shards and the cron moves its shards to
the other backends; one marked "retired" is never read. --estimate says what draining BACKEND
would cost before anything moves (whatever its state now); without it, what is left on every
draining or retired backend, the rate and the time remaining; --run moves shards now, batch by
batch, instead of waiting for the cron.

  --estimate                 the bill: requests and egress per backend at the configured prices
  --rebalance                with --estimate: the bill of a rebalance onto BACKEND (an active
                             backend, before "rebalance": true is set on it) instead of a drain
  --run                      move now until nothing is left
  --batch N                  with --run: shards per call, 1 to 1000 (default 50)

${GATEWAY_HELP}`;

interface Progress {
  backend: string;
  state: string;
  left: { shards: number; bytes: number };
  /** The catalog journal's shard files there (moved by the journal's upkeep); absent from an older gateway. */
  journalShards?: number;
  moved: { shards: number; bytes: number };
  bytesPerSecond: number | null;
  secondsRemaining: number | null;
}

interface Estimate {
  backend: string;
  shards: number;
  bytes: number;
  rebuilt: number;
  noTarget: number;
  byBackend: Record<
    string,
    { usage: { getRequests: number; putRequests: number; deleteRequests: number; bytesOut: number; bytesIn: number }; cost: { total: number } | null }
  >;
  total: { gets: number; puts: number; deletes: number; egressBytes: number; cost: number };
  complete: boolean;
}

export const command: Command = {
  name: 'drain',
  summary: 'move shards off a backend: its bill first (--estimate), progress, or now (--run)',
  help: HELP,
  async run(argv) {
    const { values, positionals } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: true,
      options: { ...GATEWAY_OPTIONS, estimate: { type: 'boolean' }, rebalance: { type: 'boolean' }, run: { type: 'boolean' }, batch: { type: 'string' } },
    });
    const client = new GatewayClient(values);
    const backend = positionals[0];
    if (values.estimate) {
      if (!backend) throw new CliError('--estimate needs the BACKEND to price');
      const e = (await client.admin('drain-estimate', { backend, rebalance: values.rebalance ? '1' : undefined })) as Estimate;
      if (values.json) printJson(e);
      else process.stdout.write(estimateText(e, values.rebalance ? 'rebalancing onto' : 'draining'));
      return 0;
    }
    if (values.rebalance) throw new CliError('--rebalance goes with --estimate (a rebalance itself is "rebalance": true in the config)');
    if (values.run) {
      let moved = 0;
      for (;;) {
        const r = (await client.admin('drain', { max: values.batch })) as {
          copied: number;
          rebuilt: number;
          rebalanced: number;
          waiting: number;
          noTarget: number;
          waits: { error: string }[];
          progress: Progress[];
        };
        moved += r.copied + r.rebuilt;
        const shown = r.progress.filter((p) => !backend || p.backend === backend);
        const left = shown.reduce((n, p) => n + p.left.shards, 0);
        if (!values.json) process.stderr.write(`moved ${moved}; left ${left}\n`);
        // Done when nothing is left on leaving backends and the run moved nothing onto a backend
        // being rebalanced (a run that did may have more to move onto it).
        if (left === 0 && r.waiting === 0 && !r.rebalanced) break;
        if (r.copied + r.rebuilt === 0) {
          process.stdout.write(`nothing moved this run: ${r.waiting} waiting (${r.waits[0]?.error ?? 'no target'}), ${r.noTarget} without a target\n`);
          return 1;
        }
      }
    }
    const answer = (await client.admin('drain-status')) as { backends: Progress[]; rebalance?: Rebalance[]; measured?: Measured | null };
    const shown = answer.backends.filter((p) => !backend || p.backend === backend);
    const filling = (answer.rebalance ?? []).filter((p) => !backend || p.backend === backend);
    if (values.json) printJson({ backends: shown, rebalance: filling, measured: answer.measured ?? null });
    else process.stdout.write((filling.length && !shown.length ? '' : progressText(shown)) + rebalanceText(filling) + measuredText(answer.measured));
    return 0;
  },
};

function progressText(backends: Progress[]): string {
  if (!backends.length) return 'every backend is active: nothing to drain\n';
  const rows = [['backend', 'state', 'shards left', 'bytes left', 'journal files', 'moved', 'rate', 'remaining']];
  for (const p of backends) {
    rows.push([
      p.backend,
      p.state,
      String(p.left.shards),
      bytes(p.left.bytes),
      String(p.journalShards ?? '-'),
      `${p.moved.shards} (${bytes(p.moved.bytes)})`,
      p.bytesPerSecond === null ? '-' : `${bytes(p.bytesPerSecond)}/s`,
      p.secondsRemaining === null ? (p.left.shards ? '-' : 'done') : duration(Math.ceil(p.secondsRemaining)),
    ]);
  }
  return table(rows) + '\n';
}

interface Rebalance {
  backend: string;
  moved: { shards: number; bytes: number };
  bucketsFilled: number;
  buckets: number;
  done: boolean;
}

function rebalanceText(backends: Rebalance[]): string {
  if (!backends.length) return '';
  const rows = [['rebalancing onto', 'moved onto it', 'buckets done', 'state']];
  for (const p of backends)
    rows.push([
      p.backend,
      `${p.moved.shards} (${bytes(p.moved.bytes)})`,
      `${p.bucketsFilled} of ${p.buckets}`,
      p.done ? 'done: "rebalance" can come off' : 'moving',
    ]);
  return table(rows) + '\n';
}

/** The mover's traffic as the cost report counts it (admin drain-status `measured`). */
export interface Measured {
  since: string;
  usage: { getRequests: number; putRequests: number; deleteRequests: number; bytesOut: number };
  cost: { total: number } | null;
}

/** One line to hold against `--estimate`: what the mover has asked so far (all drains and rebalances since the record began). */
export function measuredText(m: Measured | null | undefined): string {
  if (!m || m.usage.getRequests + m.usage.putRequests === 0) return '';
  const cost = m.cost ? `, $${m.cost.total.toFixed(4)}` : '';
  return `the mover has asked, since ${m.since}: ${m.usage.getRequests} GETs, ${m.usage.putRequests} PUTs, ${bytes(m.usage.bytesOut)} egress${cost} (the old copies' DELETEs are the collector's)\n`;
}

function estimateText(e: Estimate, what: string): string {
  const lines = [
    `${what} ${e.backend}: ${e.shards} shard(s), ${bytes(e.bytes)} to move (${e.rebuilt} rebuilt from other shards)${e.noTarget ? `; ${e.noTarget} have no target within the placement rules` : ''}${e.complete ? '' : ' (partial: the walk stopped early)'}`,
  ];
  const rows = [['backend', 'GETs', 'PUTs', 'DELETEs', 'egress', 'cost (USD)']];
  for (const [id, l] of Object.entries(e.byBackend))
    rows.push([
      id,
      String(l.usage.getRequests),
      String(l.usage.putRequests),
      String(l.usage.deleteRequests),
      bytes(l.usage.bytesOut),
      l.cost ? l.cost.total.toFixed(4) : 'unpriced',
    ]);
  rows.push(['total', String(e.total.gets), String(e.total.puts), String(e.total.deletes), bytes(e.total.egressBytes), e.total.cost.toFixed(4)]);
  return [...lines, table(rows), ''].join('\n');
}
