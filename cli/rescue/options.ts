/** The options `rescue` and `verify` share: where the shard files are, which objects, the keys of sealed units. */
import { readFileSync } from 'node:fs';
import { CliError } from '../command.ts';
import { KeyRing } from '../../worker/format/seal.ts';
import { openSources, wranglerStateDirs, type ShardSource } from './sources.ts';

export const SOURCE_OPTIONS = {
  from: { type: 'string', multiple: true },
  'wrangler-state': { type: 'string' },
  bucket: { type: 'string' },
  prefix: { type: 'string' },
  key: { type: 'string', multiple: true },
  'keys-file': { type: 'string' },
  json: { type: 'boolean' },
} as const;

export const SOURCE_HELP = `Where the shards are (give every backend you still have; up to m may be missing):
  --from DIR                 a directory holding shard files, searched whole: a copy of a backend
                             bucket (sg1/<bucket or _shelf>/<unit>/<shard>) or a wrangler R2 bucket directory
                             (.wrangler/state/v3/r2/<name>); repeat for each backend
  --from URL                 an S3-compatible backend bucket: http(s)://[KEY:SECRET@]host[:port]/bucket
                             [?region=R&style=virtual]; the key defaults to AWS_ACCESS_KEY_ID /
                             AWS_SECRET_ACCESS_KEY; repeat for each backend
  --wrangler-state DIR       every R2 bucket directory of a wrangler state directory
                             (npm start's .wrangler/state)
Which objects:
  --bucket NAME              only this gateway bucket
  --prefix P                 only keys starting with P
  --json                     print the report as JSON
Sealed (encrypted) units: the gateway's key-encryption keys, by the ids of its config's
"encryption" keys. Give every key units were ever written under: a rotation re-wraps data keys
in the catalog only, each shard header keeps the key id it was written with.
  --key ID=BASE64            one key: its id and base64 of its 32 bytes; repeat for each key
  --keys-file PATH           a JSON file {"ID": "BASE64", ...}
                             (also read: the environment variable SHARDGATE_KEYS, the same JSON)
  Without its key a sealed unit's bucket, key and bytes cannot be read: such units are counted
  and listed with the key id they need (whatever --prefix says: their keys are sealed too);
  rescue writes nothing of them, verify checks only their blocks.`;

export function sourcesFrom(values: { from?: string[]; 'wrangler-state'?: string }): ShardSource[] {
  const specs = [...(values.from ?? []), ...(values['wrangler-state'] ? wranglerStateDirs(values['wrangler-state']) : [])];
  if (specs.length === 0) throw new CliError('say where the shards are: --from DIR|URL (repeat it) or --wrangler-state DIR');
  return openSources(specs);
}

/** `{"id": "base64", ...}` from `where` (never echoing a value). */
function keysJson(text: string, where: string): Record<string, string> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new CliError(`${where}: not JSON; write {"<key id>": "<base64 of 32 bytes>", ...}`);
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed) || Object.values(parsed).some((v) => typeof v !== 'string')) {
    throw new CliError(`${where}: write an object {"<key id>": "<base64 of 32 bytes>", ...}`);
  }
  return parsed as Record<string, string>;
}

/**
 * The key ring of --key, --keys-file and SHARDGATE_KEYS (undefined when none is given): it only
 * opens (no active key). One id given twice with different values is refused; a value that is
 * not base64 of 32 bytes is refused naming its id, never its value.
 */
export function keyRingFrom(values: { key?: string[]; 'keys-file'?: string }, env: NodeJS.ProcessEnv = process.env): KeyRing | undefined {
  const keys: Record<string, string> = {};
  const add = (id: string, value: string, where: string) => {
    if (!id) throw new CliError(`${where}: a key needs an id (ID=BASE64)`);
    if (keys[id] !== undefined && keys[id]!.trim() !== value.trim()) throw new CliError(`key "${id}" is given twice with different values (${where})`);
    let bytes = -1;
    try {
      bytes = atob(value.trim()).length;
    } catch {
      /* not base64: below */
    }
    if (bytes !== 32) throw new CliError(`key "${id}" (${where}) is not base64 of 32 bytes`);
    keys[id] = value;
  };
  if (env.SHARDGATE_KEYS) for (const [id, v] of Object.entries(keysJson(env.SHARDGATE_KEYS, 'SHARDGATE_KEYS'))) add(id, v, 'SHARDGATE_KEYS');
  if (values['keys-file']) {
    let text: string;
    try {
      text = readFileSync(values['keys-file'], 'utf8');
    } catch (err) {
      throw new CliError(`--keys-file ${values['keys-file']}: ${(err as NodeJS.ErrnoException).code ?? 'unreadable'}`);
    }
    for (const [id, v] of Object.entries(keysJson(text, values['keys-file']))) add(id, v, values['keys-file']);
  }
  for (const spec of values.key ?? []) {
    const at = spec.indexOf('=');
    if (at < 0) throw new CliError('--key takes ID=BASE64 (the key id, "=", base64 of its 32 bytes)');
    add(spec.slice(0, at), spec.slice(at + 1), '--key');
  }
  return Object.keys(keys).length ? KeyRing.fromBase64(keys, null) : undefined;
}
