/**
 * `shardgate rotate-keys --to ID`: re-wraps every object's data key under key ID (the gateway's
 * active key) through POST /_shardgate/admin/rotate-keys, call after call until every bucket is
 * done. Catalog only: no shard is read or written.
 */
import { parseArgs } from 'node:util';
import type { Command } from '../command.ts';
import { printJson } from '../format.ts';
import { GATEWAY_HELP, GATEWAY_OPTIONS, GatewayClient } from '../gateway-client.ts';
import { Progress } from '../progress.ts';

const HELP = `usage: shardgate rotate-keys --to ID [--json] [gateway options]

Re-wraps the data key of every sealed object, version and uploaded part under the key-encryption
key ID, which must be the gateway's encryption.active. Only the catalog changes: the encrypted
shards on the backends are not read or rewritten. Progress is kept in the catalog, so an
interrupted rotation goes on where it stopped. When it reports done, keys other than ID can be
removed from encryption.keys (and their secrets deleted), unless it lists records whose key the
gateway does not have ("unopenable").

To rotate: add the new key to encryption.keys (its secret set), make it encryption.active,
deploy, then run this.

  --to ID                    the key to wrap under (the active key)

${GATEWAY_HELP}`;

interface Report {
  to: string;
  done: boolean;
  buckets: { bucket: string; scanned: number; rewrapped: number; conflicts: number; unopenable: number; passes: number; done: boolean }[];
}

export const command: Command = {
  name: 'rotate-keys',
  summary: 're-wrap every data key under the active key (catalog only, no shard rewritten)',
  help: HELP,
  async run(argv) {
    const { values } = parseArgs({ args: argv, options: { ...GATEWAY_OPTIONS, to: { type: 'string' } }, strict: true });
    if (!values.to) {
      process.stderr.write('rotate-keys needs --to ID\n');
      return 2;
    }
    const client = new GatewayClient(values);
    const progress = new Progress('rotate-keys', !values.json && Boolean(process.stderr.isTTY));
    let report: Report;
    let calls = 0;
    for (;;) {
      report = (await client.admin('rotate-keys', { to: values.to })) as Report;
      calls++;
      const done = report.buckets.filter((b) => b.done).length;
      progress.update(done, report.buckets.length, `${report.buckets.reduce((n, b) => n + b.rewrapped, 0)} re-wrapped`);
      if (report.done) break;
    }
    progress.end();
    if (values.json) printJson({ ...report, calls });
    else {
      for (const b of report.buckets)
        process.stdout.write(
          `${b.bucket}: ${b.rewrapped} record(s) re-wrapped${b.unopenable ? `, ${b.unopenable} sealed under a key the gateway does not have` : ''}\n`,
        );
      const unopenable = report.buckets.reduce((n, b) => n + b.unopenable, 0);
      process.stdout.write(
        unopenable
          ? `done, but ${unopenable} record(s) could not be re-wrapped: keep their keys in the ring\n`
          : `done: every data key is wrapped under "${report.to}"; other keys may be removed from encryption.keys\n`,
      );
    }
    return 0;
  },
};
