/**
 * `shardgate rebuild --bucket NAME`: recovers a bucket's catalog from the shard headers on the
 * backends (POST /_shardgate/admin/rebuild); keys the catalog still has are kept.
 */
import { parseArgs } from 'node:util';
import { CliError, type Command } from '../command.ts';
import { printJson } from '../format.ts';
import { GATEWAY_HELP, GATEWAY_OPTIONS, GatewayClient } from '../gateway-client.ts';

const HELP = `usage: shardgate rebuild --bucket NAME [--json] [gateway options]

Rebuilds the catalog entries of a bucket from the self-describing shard files on the backends,
for the day the catalog (or part of it) is lost. Single-PUT objects come back; multipart objects
(their part list lives only in the catalog) and inline objects (no shards) do not. Keys the
catalog still has are left alone. For data without any gateway, see shardgate rescue.

  --bucket NAME              the bucket to rebuild (created if missing)

${GATEWAY_HELP}`;

export const command: Command = {
  name: 'rebuild',
  summary: "rebuild a bucket's catalog from the shard headers on the backends",
  help: HELP,
  async run(argv) {
    const { values } = parseArgs({ args: argv, options: { ...GATEWAY_OPTIONS, bucket: { type: 'string' } }, strict: true });
    if (!values.bucket) throw new CliError('--bucket NAME is required');
    const r = (await new GatewayClient(values).admin('rebuild', { bucket: values.bucket })) as { restored: string[]; kept: string[]; unrecoverable: { unitId: string; reason: string }[]; retired?: string[] };
    if (values.json) printJson(r);
    else {
      process.stdout.write(`restored ${r.restored.length} object(s), kept ${r.kept.length}, unrecoverable ${r.unrecoverable.length}, ignored ${r.retired?.length ?? 0} unit(s) of deleted or superseded versions\n`);
      for (const u of r.unrecoverable) process.stdout.write(`  ${u.unitId}: ${u.reason}\n`);
    }
    return 0;
  },
};
