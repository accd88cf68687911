/**
 * `shardgate rebuild --bucket NAME`: recovers a bucket's catalog from the shard headers on the
 * backends (POST /_shardgate/admin/rebuild); keys the catalog still has are kept.
 * `--lost` lists the buckets whose catalog the gateway found lost (POST .../catalog-loss;
 * upkeep/catalog-loss.ts), `--discard NAME` gives up the journal of one (POST .../discard-journal).
 */
import { parseArgs } from 'node:util';
import { CliError, type Command } from '../command.ts';
import { printJson } from '../format.ts';
import { GATEWAY_HELP, GATEWAY_OPTIONS, GatewayClient } from '../gateway-client.ts';

const HELP = `usage: shardgate rebuild --bucket NAME [--no-journal] [--json] [gateway options]
       shardgate rebuild --lost [--json] [gateway options]
       shardgate rebuild --discard NAME [--json] [gateway options]

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
  --lost                     the buckets whose catalog the gateway found lost: the backends hold
                             their journal and the catalog lacks them, or holds them behind it
                             (status check catalog-lost). Writes to them are refused
                             (InvalidBucketState) until each is rebuilt (--bucket: the journal is
                             merged with whatever was written since the loss) or discarded. Exit 1
                             when there is any.
  --discard NAME             gives up the backends' journal of a lost bucket: writes to it are
                             accepted again with the catalog as it is. Its segments are kept for 7
                             days (or until the bucket's new journal is complete) and its data's
                             shard files are not touched: --bucket can still restore its objects
                             from their headers.

${GATEWAY_HELP}`;

export const command: Command = {
  name: 'rebuild',
  summary: "rebuild a bucket's catalog from the shard headers on the backends",
  help: HELP,
  async run(argv) {
    const { values } = parseArgs({
      args: argv,
      options: { ...GATEWAY_OPTIONS, bucket: { type: 'string' }, 'no-journal': { type: 'boolean' }, lost: { type: 'boolean' }, discard: { type: 'string' } },
      strict: true,
    });
    if ([values.bucket !== undefined, values.lost === true, values.discard !== undefined].filter(Boolean).length !== 1)
      throw new CliError('one of --bucket NAME, --lost or --discard NAME is required');
    const client = new GatewayClient(values);
    if (values.lost) {
      const loss = (await client.admin('catalog-loss')) as LossAnswer;
      if (values.json) printJson(loss);
      else printLoss(loss);
      return Object.keys(loss.lost).length ? 1 : 0;
    }
    if (values.discard !== undefined) {
      const r = (await client.admin('discard-journal', { bucket: values.discard })) as { instance: string; segments: number; loss: LossAnswer };
      if (values.json) printJson(r);
      else {
        process.stdout.write(
          `discarded the journal of ${r.instance} on the backends: ${r.segments} segment(s), deleted once its new journal is complete (or after 7 days); writes to it are accepted again\n`,
        );
        printLoss(r.loss);
      }
      return 0;
    }
    if (!values.bucket) throw new CliError('--bucket NAME is required');
    const r = (await client.admin('rebuild', { bucket: values.bucket, ...(values['no-journal'] ? { journal: '0' } : {}) })) as {
      restored: string[];
      kept: string[];
      unrecoverable: { unitId: string; reason: string }[];
      retired?: string[];
      catalogLost?: boolean;
      unlisted?: string[];
      journal?: {
        segments: number;
        asOf: string | null;
        rows: number;
        versions: number;
        deleteMarkers: number;
        settings: string[];
        unreadable: { id: string; reason: string }[];
        doubts: string[];
        skipped?: string;
      };
    };
    if (values.json) printJson(r);
    else {
      const j = r.journal;
      if (j?.skipped) process.stdout.write(`journal: not imported: ${j.skipped}\n`);
      else if (j?.asOf)
        process.stdout.write(
          `journal: ${j.segments} segment(s) as of ${j.asOf}: ${j.versions} version(s), ${j.deleteMarkers} delete marker(s), settings ${j.settings.join(', ') || '-'}\n`,
        );
      else if (j) process.stdout.write('journal: none found for this bucket\n');
      for (const u of j?.unreadable ?? []) process.stdout.write(`  journal ${u.id}: ${u.reason}\n`);
      for (const d of j?.doubts ?? []) process.stdout.write(`  journal doubt: ${d}\n`);
      if (r.catalogLost)
        process.stdout.write(
          j?.asOf && !j.skipped && !j.unreadable.length
            ? 'catalog loss: ended for this bucket (its journal is in, merged with the writes made since); writes are accepted again\n'
            : 'catalog loss: NOT ended: the journal of this bucket was not imported whole (see above); writes stay refused (--discard gives it up)\n',
        );
      process.stdout.write(
        `restored ${r.restored.length} object(s), kept ${r.kept.length}, unrecoverable ${r.unrecoverable.length}, ignored ${r.retired?.length ?? 0} unit(s) of deleted or superseded versions\n`,
      );
      for (const u of r.unrecoverable) process.stdout.write(`  ${u.unitId}: ${u.reason}\n`);
      if (r.unlisted?.length)
        process.stdout.write(
          `not listed: ${r.unlisted.join(', ')} did not answer; restored from the other backends (a unit with fewer than k shards on them is listed unrecoverable): once they are back, \`shardgate repair\`, and \`shardgate rebuild --bucket ${values.bucket}\` again for what was unrecoverable\n`,
        );
    }
    // Something of the journal could not be read, or a backend was not listed: the rebuilt catalog may lack what it held.
    return r.journal?.unreadable.length || r.journal?.doubts.length || r.unlisted?.length ? 1 : 0;
  },
};

/** The admin answer of catalog-loss (worker/catalog/types.ts CatalogLoss; cli/ keeps its own copy of the shape). */
interface LossAnswer {
  lost: Record<string, { reason: 'unknown' | 'behind'; newest: number; catalogSegment: number; foundAt: number }>;
  suspect: Record<string, { foundAt: number }>;
}

const BUCKET_LIST = '__buckets__';

function printLoss(loss: LossAnswer): void {
  const lost = Object.entries(loss.lost);
  if (!lost.length) process.stdout.write('catalog loss: none (the catalog knows every journal segment on the backends)\n');
  for (const [name, l] of lost) {
    const what = name === BUCKET_LIST ? 'the bucket list' : `bucket ${name}`;
    const why = l.reason === 'unknown' ? 'the catalog lacks it' : `the catalog's journal ends at segment ${l.catalogSegment}`;
    const next =
      name === BUCKET_LIST
        ? `ends with the last bucket rebuilt or discarded (with none left: shardgate rebuild --discard ${BUCKET_LIST})`
        : `shardgate rebuild --bucket ${name} | --discard ${name}`;
    process.stdout.write(
      `LOST    ${what}: its journal on the backends reaches segment ${l.newest}, ${why} (found ${new Date(l.foundAt).toISOString()}); ${next}\n`,
    );
  }
  for (const [name, s] of Object.entries(loss.suspect))
    process.stdout.write(
      `suspect bucket ${name}: journal segments the catalog does not know, seen ${new Date(s.foundAt).toISOString()} (confirmed if still there a minute later)\n`,
    );
}
