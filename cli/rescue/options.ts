/** The options `rescue` and `verify` share: where the shard files are, which objects. */
import { CliError } from '../command.ts';
import { openSources, wranglerStateDirs, type ShardSource } from './sources.ts';

export const SOURCE_OPTIONS = {
  from: { type: 'string', multiple: true },
  'wrangler-state': { type: 'string' },
  bucket: { type: 'string' },
  prefix: { type: 'string' },
  json: { type: 'boolean' },
} as const;

export const SOURCE_HELP = `Where the shards are (give every backend you still have; up to m may be missing):
  --from DIR                 a directory holding shard files, searched whole: a copy of a backend
                             bucket (sg1/<bucket>/<unit>/<shard>) or a wrangler R2 bucket directory
                             (.wrangler/state/v3/r2/<name>); repeat for each backend
  --from URL                 an S3-compatible backend bucket: http(s)://[KEY:SECRET@]host[:port]/bucket
                             [?region=R&style=virtual]; the key defaults to AWS_ACCESS_KEY_ID /
                             AWS_SECRET_ACCESS_KEY; repeat for each backend
  --wrangler-state DIR       every R2 bucket directory of a wrangler state directory
                             (npm start's .wrangler/state)
Which objects:
  --bucket NAME              only this gateway bucket
  --prefix P                 only keys starting with P
  --json                     print the report as JSON`;

export function sourcesFrom(values: { from?: string[]; 'wrangler-state'?: string }): ShardSource[] {
  const specs = [...(values.from ?? []), ...(values['wrangler-state'] ? wranglerStateDirs(values['wrangler-state']) : [])];
  if (specs.length === 0) throw new CliError('say where the shards are: --from DIR|URL (repeat it) or --wrangler-state DIR');
  return openSources(specs);
}
