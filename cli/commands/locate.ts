/**
 * `shardgate locate BUCKET KEY [--version-id V]`: where the shards of an object are (POST
 * /_shardgate/admin/locate, upkeep/locate.ts): for each unit and shard its backend, shard key and
 * whether the backend holds it now with the right size, and whether the catalog records it
 * missing. Exit 1 when some unit has fewer than k shards present.
 */
import { parseArgs } from 'node:util';
import { CliError, type Command } from '../command.ts';
import { bytes, printJson, table } from '../format.ts';
import { GATEWAY_HELP, GATEWAY_OPTIONS, GatewayClient } from '../gateway-client.ts';

/** The admin API's answer (worker/upkeep/locate.ts `Location`). */
export interface Location {
  bucket: string;
  key: string;
  versionId: string;
  size: number;
  storage: 'inline' | 'coded';
  units: {
    unitId: string;
    codec: string;
    k: number;
    m: number;
    size: number;
    readable: boolean;
    shards: {
      index: number;
      role: string;
      backend: string;
      shardKey: string;
      state: string;
      size: number | null;
      expectedSize: number;
      recordedMissing: boolean;
    }[];
  }[];
  truncated: boolean;
}

const HELP = `usage: shardgate locate BUCKET KEY [--version-id V] [--json] [gateway options]

Prints where the shards of an object are: for each unit and shard, its backend, its shard key and
what the backend says of it now (one HEAD per shard, no data read): present (the right size),
missing, wrong-size (truncated or not this unit's file) or unreachable; and whether the catalog
records it missing (repair will rewrite it). Exit 1 when a unit has fewer than k shards present.

  --version-id V             that version (default: the current one)

${GATEWAY_HELP}`;

/** The location as a table, one shard a row, a line per unit above its shards. */
export function locationText(l: Location): string {
  const head = `${l.bucket}/${l.key} version ${l.versionId}: ${bytes(l.size)}`;
  if (l.storage === 'inline') return `${head}, stored inline in the catalog (no shards)\n`;
  const rows = l.units.flatMap((u) =>
    u.shards.map((s) => [
      u.unitId,
      `${s.index} (${s.role})`,
      s.backend,
      s.state + (s.recordedMissing ? ' (recorded missing)' : ''),
      s.size === null ? '-' : `${s.size}`,
      `${s.expectedSize}`,
      s.shardKey,
    ]),
  );
  const units = l.units.map(
    (u) =>
      `unit ${u.unitId}: ${u.codec} ${u.k}+${u.m}, ${bytes(u.size)}, ${u.shards.filter((s) => s.state === 'present').length} of ${u.k + u.m} shards present${u.readable ? '' : ` (FEWER THAN k=${u.k}: unreadable now)`}`,
  );
  return (
    [
      head,
      ...units,
      '',
      table([['UNIT', 'SHARD', 'BACKEND', 'STATE', 'SIZE', 'EXPECTED', 'SHARD KEY'], ...rows]),
      l.truncated ? `(first ${l.units.length} units only)` : '',
    ]
      .join('\n')
      .trimEnd() + '\n'
  );
}

export const command: Command = {
  name: 'locate',
  summary: 'where the shards of an object are, and which are present',
  help: HELP,
  async run(argv) {
    const { values, positionals } = parseArgs({
      args: argv,
      options: { ...GATEWAY_OPTIONS, 'version-id': { type: 'string' } },
      strict: true,
      allowPositionals: true,
    });
    if (positionals.length !== 2) throw new CliError('locate needs BUCKET and KEY');
    const [bucket, key] = positionals as [string, string];
    const client = new GatewayClient(values);
    const l = (await client.admin('locate', { bucket, key, versionId: values['version-id'] })) as Location;
    if (values.json) printJson(l);
    else process.stdout.write(locationText(l));
    return l.units.every((u) => u.readable) ? 0 : 1;
  },
};
