/**
 * `shardgate keys list|create|disable|enable|rotate|rewrap`: the gateway's named KMS keys (SSE-KMS),
 * through the admin API's kms-keys routes (worker/app/kms-key-routes.ts). `rotate` makes a new
 * current version, then re-wraps the data keys of every object under the key's older versions
 * under it, call after call until every bucket is done: catalog only, no shard read or written.
 * `rewrap` is that second part alone, which for a key backed by a Vault / OpenBao transit key
 * first has Vault re-wrap the key's versions under the transit key's latest version (after the
 * operator rotated it in Vault).
 */
import { parseArgs } from 'node:util';
import type { Command } from '../command.ts';
import { printJson } from '../format.ts';
import { GATEWAY_HELP, GATEWAY_OPTIONS, GatewayClient } from '../gateway-client.ts';
import { Progress } from '../progress.ts';

const HELP = `usage: shardgate keys list [--json] [gateway options]
       shardgate keys create ID [--json] [gateway options]
       shardgate keys disable ID | enable ID [--json] [gateway options]
       shardgate keys rotate ID | rewrap ID [--json] [gateway options]

The gateway's named KMS keys: what a client names with
x-amz-server-side-encryption: aws:kms and x-amz-server-side-encryption-aws-kms-key-id (the bare
ID or arn:aws:kms:<region>:<account>:key/ID), or a bucket's default encryption. Each key version
is 32 random bytes, stored only wrapped under the gateway's active encryption key, in the catalog,
or, for a key the config backs by a Vault / OpenBao transit key, wrapped by that transit key.

  list            every key: ARN, state, current version
  create ID       a new key (ID: 1 to 64 letters, digits, ".", "_", "-")
  disable ID      writes and reads naming the key are refused (KMS.DisabledException) until enabled
  enable ID       allowed again
  rotate ID       a new version (new writes use it at once), then every data key under an older
                  version re-wrapped under it; only the catalog changes, no shard is rewritten
  rewrap ID       the re-wrap alone: after the key's transit key was rotated in Vault, Vault
                  re-wraps every version under its latest version (then the data keys as above)

${GATEWAY_HELP}`;

interface Key {
  id: string;
  arn: string;
  state: string;
  origin: string;
  version: number;
  transit?: boolean;
}

interface RewrapReport {
  id: string;
  version: number;
  done: boolean;
  /** Versions Vault re-wrapped (transit-backed keys). */
  transitRewrapped?: number;
  buckets: { bucket: string; rewrapped: number; unopenable: number; done: boolean }[];
}

const line = (k: Key) => `${k.arn}  ${k.state}  version ${k.version}  (${k.origin}${k.transit ? ', Vault transit' : ''})\n`;

export const command: Command = {
  name: 'keys',
  summary: 'list, create, disable, enable and rotate the named KMS keys (SSE-KMS)',
  help: HELP,
  async run(argv) {
    const { values, positionals } = parseArgs({ args: argv, options: { ...GATEWAY_OPTIONS }, strict: true, allowPositionals: true });
    const [action, id] = positionals;
    const client = new GatewayClient(values);
    const show = (answer: unknown, text: string) => (values.json ? printJson(answer) : process.stdout.write(text));
    if (action === 'list') {
      const { keys } = (await client.admin('kms-keys')) as { keys: Key[] };
      show({ keys }, keys.length ? keys.map(line).join('') : 'no KMS keys\n');
      return 0;
    }
    if (!['create', 'disable', 'enable', 'rotate', 'rewrap'].includes(action ?? '') || !id || positionals.length !== 2) {
      process.stderr.write(HELP);
      return 2;
    }
    const key =
      action === 'rewrap'
        ? ((await client.admin('kms-keys')) as { keys: Key[] }).keys.find((k) => k.id === id)
        : ((await client.admin(`kms-keys/${action}`, { id })) as Key);
    if (!key) {
      process.stderr.write(`shardgate keys: no KMS key "${id}"\n`);
      return 1;
    }
    if (action !== 'rotate' && action !== 'rewrap') {
      show(key, line(key));
      return 0;
    }
    const progress = new Progress(`keys ${action}`, !values.json && Boolean(process.stderr.isTTY));
    let transitRewrapped = 0;
    let report: RewrapReport;
    let calls = 0;
    for (;;) {
      report = (await client.admin('kms-keys/rewrap', { id })) as RewrapReport;
      transitRewrapped += report.transitRewrapped ?? 0;
      calls++;
      progress.update(report.buckets.filter((b) => b.done).length, report.buckets.length, `${report.buckets.reduce((n, b) => n + b.rewrapped, 0)} re-wrapped`);
      if (report.done) break;
    }
    progress.end();
    const rewrapped = report.buckets.reduce((n, b) => n + b.rewrapped, 0);
    const unopenable = report.buckets.reduce((n, b) => n + b.unopenable, 0);
    show(
      { key, rewrap: report, calls, ...(key.transit ? { transitRewrapped } : {}) },
      `${line(key)}${key.transit ? `${transitRewrapped} key version(s) re-wrapped by Vault; ` : ''}${rewrapped} record(s) re-wrapped under version ${report.version}${unopenable ? `; ${unopenable} could not be opened` : ''}\n`,
    );
    return 0;
  },
};
