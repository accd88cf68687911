/**
 * `shardgate rebuild --bucket NAME`: recovers a bucket's catalog from the shard headers on the
 * backends (POST /_shardgate/admin/rebuild); keys the catalog still has are kept.
 */
import { parseArgs } from 'node:util';
import { CliError, type Command } from '../command.ts';
import { printJson } from '../format.ts';
import { GATEWAY_HELP, GATEWAY_OPTIONS, GatewayClient } from '../gateway-client.ts';

const HELP = `usage: shardgate rebuild --bucket NAME [--no-journal] [--json] [gateway options]

Rebuilds the catalog of a bucket from the backends, for the day the catalog (or part of it) is
lost. First from the catalog journal (docs/FORMAT.md, "The catalog journal"), when the bucket's
catalog holds no version: every version and delete marker, inline objects, multipart objects with
their part lists, uploads in progress and the bucket's settings, as of the journal's last segment.
Then from the self-describing shard files: writes newer than the journal become their keys'
newest versions; without a journal, single-PUT objects come back (multipart and inline objects do
not) and keys the catalog still has are left alone. For data without any gateway, see shardgate
rescue.

  --bucket NAME              the bucket to rebuild (created if missing)
  --no-journal               from the shard headers only

${GATEWAY_HELP}`;

export const command: Command = {
  name: 'rebuild',
  summary: "rebuild a bucket's catalog from the shard headers on the backends",
  help: HELP,
  async run(argv) {
    const { values } = parseArgs({ args: argv, options: { ...GATEWAY_OPTIONS, bucket: { type: 'string' }, 'no-journal': { type: 'boolean' } }, strict: true });
    if (!values.bucket) throw new CliError('--bucket NAME is required');
    const r = (await new GatewayClient(values).admin('rebuild', { bucket: values.bucket, ...(values['no-journal'] ? { journal: '0' } : {}) })) as {
      restored: string[]; kept: string[]; unrecoverable: { unitId: string; reason: string }[]; retired?: string[];
      journal?: { segments: number; asOf: string | null; rows: number; versions: number; deleteMarkers: number; settings: string[]; unreadable: { id: string; reason: string }[]; doubts: string[]; skipped?: string };
    };
    if (values.json) printJson(r);
    else {
      const j = r.journal;
      if (j?.skipped) process.stdout.write(`journal: not imported: ${j.skipped}\n`);
      else if (j?.asOf) process.stdout.write(`journal: ${j.segments} segment(s) as of ${j.asOf}: ${j.versions} version(s), ${j.deleteMarkers} delete marker(s), settings ${j.settings.join(', ') || '-'}\n`);
      else if (j) process.stdout.write('journal: none found for this bucket\n');
      for (const u of j?.unreadable ?? []) process.stdout.write(`  journal ${u.id}: ${u.reason}\n`);
      for (const d of j?.doubts ?? []) process.stdout.write(`  journal doubt: ${d}\n`);
      process.stdout.write(`restored ${r.restored.length} object(s), kept ${r.kept.length}, unrecoverable ${r.unrecoverable.length}, ignored ${r.retired?.length ?? 0} unit(s) of deleted or superseded versions\n`);
      for (const u of r.unrecoverable) process.stdout.write(`  ${u.unitId}: ${u.reason}\n`);
    }
    // Something of the journal could not be read: the rebuilt catalog may lack what it held.
    return r.journal?.unreadable.length || r.journal?.doubts.length ? 1 : 0;
  },
};
