/**
 * `shardgate check-deploy` (cli/deploy/check.ts): the production example passes and names the
 * secrets to set; the development config, a config that sets the local-development signal, one
 * missing the catalog, queue or cron, and one whose SHARDGATE_CONFIG does not parse all fail.
 * This is what CI's `npm run check:deploy` runs after the dry run. With --endpoint, the config is
 * also held against the running gateway's recorded shards (a retired or dropped backend that still
 * holds some is refused, naming the count).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { run } from '../../cli/commands/check-deploy.ts';
import { checkDeployment } from '../../cli/deploy/check.ts';
import { reviewFleetAgainstLive, type LiveBackend } from '../../cli/deploy/live-fleet.ts';
import type { GatewayConfig } from '../../worker/config/config.ts';
import { DEV_KEY_VALUE } from '../../worker/config/key-ring.ts';
import { ROOT } from '../support/worker.ts';

const PRODUCTION = join(ROOT, 'wrangler.production.toml');
const dir = mkdtempSync(join(tmpdir(), 'shardgate-check-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** wrangler.production.toml with `edit` applied, as a file of its own. */
function variant(name: string, edit: (toml: string) => string): string {
  const path = join(dir, `${name}.toml`);
  writeFileSync(path, edit(readFileSync(PRODUCTION, 'utf8')).replace('main = "worker/index.ts"', `main = "${join(ROOT, 'worker/index.ts')}"`));
  return path;
}

/** `toml` without the table that starts with the line `header` (up to the next blank line). */
function dropTable(toml: string, header: string): string {
  const lines = toml.split('\n');
  const at = lines.indexOf(header);
  if (at < 0) throw new Error(`no ${header}`);
  let end = at;
  while (end < lines.length && lines[end] !== '') end++;
  return [...lines.slice(0, at), ...lines.slice(end)].join('\n');
}

describe('check-deploy', () => {
  it('the production example is fit for deployment and lists every secret it names', async () => {
    const r = checkDeployment(PRODUCTION);
    expect(r.problems).toEqual([]);
    expect(r.warnings).toEqual([]);
    expect(r.secrets).toEqual([
      'SHARDGATE_APP_SECRET',
      'SHARDGATE_ADMIN_SECRET',
      'AWS_FRA_KEY_ID',
      'AWS_FRA_SECRET',
      'B2_AMS_KEY_ID',
      'B2_AMS_SECRET',
      'WASABI_KEY_ID',
      'WASABI_SECRET',
      'GCS_HMAC_KEY_ID',
      'GCS_HMAC_SECRET',
      'SHARDGATE_KEY_K1',
    ]);
    expect(new Set(r.config!.backends.map((b) => b.domain)).size).toBe(6);
    const lines: string[] = [];
    expect(await run(['-c', PRODUCTION], (l) => lines.push(l))).toBe(0);
    expect(lines.at(-1)).toBe(`${PRODUCTION}: fit for deployment`);
  });

  it('secrets written as plain [vars] are problems, and their values are reviewed as the gateway reads them (issue 37)', () => {
    const plain = variant('plain-secrets', (t) =>
      t.replace('[vars]\n', `[vars]\nSHARDGATE_APP_SECRET = "shardgate-dev-secret"\nSHARDGATE_KEY_K1 = "${DEV_KEY_VALUE}"\nAWS_FRA_SECRET = "an aws secret"\n`),
    );
    const problems = checkDeployment(plain).problems;
    for (const name of ['SHARDGATE_APP_SECRET', 'SHARDGATE_KEY_K1', 'AWS_FRA_SECRET'])
      expect(problems).toContainEqual(expect.stringMatching(new RegExp(`^${name} is a plain entry of \\[vars\\], but the config names it as a secret`)));
    // The deployed gateway would refuse these values: so does the check.
    expect(problems).toContainEqual('access key example-app: the secret SHARDGATE_APP_SECRET holds the development secret; choose a secret of your own.');
    expect(problems).toContainEqual(expect.stringMatching(/^encryption key "k1": the secret SHARDGATE_KEY_K1 holds the published development key/));
    expect(problems).toHaveLength(5);
  });

  it('ops.metricsTokenSecret is a secret like the others: listed, not refused', () => {
    const metrics = variant('metrics-token', (t) =>
      t.replace('"defaultPolicy": "ec-4-2",', '"defaultPolicy": "ec-4-2",\n  "ops": { "metricsTokenSecret": "SHARDGATE_METRICS_TOKEN" },'),
    );
    const r = checkDeployment(metrics);
    expect(r.problems).toEqual([]);
    expect(r.secrets).toContain('SHARDGATE_METRICS_TOKEN');
    const plain = variant('metrics-token-plain', (t) =>
      t
        .replace('"defaultPolicy": "ec-4-2",', '"defaultPolicy": "ec-4-2",\n  "ops": { "metricsTokenSecret": "SHARDGATE_METRICS_TOKEN" },')
        .replace('[vars]\n', '[vars]\nSHARDGATE_METRICS_TOKEN = "token"\n'),
    );
    expect(checkDeployment(plain).problems).toEqual([expect.stringMatching(/^SHARDGATE_METRICS_TOKEN is a plain entry of \[vars\]/)]);
  });

  it("a Vault-backed KMS key's token secret is a secret like the others: listed, not refused; plain HTTP to Vault is warned about", () => {
    const transit = (address: string) =>
      `"active": "k1",\n    "kmsKeys": [{ "id": "vaulted", "transit": { "address": "${address}", "key": "shardgate", "tokenSecret": "SHARDGATE_VAULT_TOKEN" } }]`;
    const r = checkDeployment(variant('vault-token', (t) => t.replace('"active": "k1"', transit('https://vault.example.com:8200'))));
    expect(r.problems).toEqual([]);
    expect(r.secrets).toContain('SHARDGATE_VAULT_TOKEN');
    expect(r.warnings.filter((w) => w.includes('vaulted'))).toEqual([]);
    const http = checkDeployment(variant('vault-http', (t) => t.replace('"active": "k1"', transit('http://vault.internal:8200'))));
    expect(http.warnings).toContainEqual(expect.stringMatching(/KMS key "vaulted" .*without TLS/));
  });

  it('the development config of wrangler.toml would be refused', async () => {
    const lines: string[] = [];
    expect(await run(['-c', join(ROOT, 'wrangler.toml')], (l) => lines.push(l))).toBe(1);
    expect(lines).toContain(
      'problem: access key shardgate-dev is the development key, which everyone knows: it works only in local development (npm start). Configure your own key.',
    );
    // npm start's local webhook (issue 40): plain http, to a loopback address, with its secret inline.
    expect(lines.filter((l) => l.startsWith('problem: notifications.destinations.local-webhook'))).toHaveLength(3);
    expect(lines.at(-1)).toMatch(/wrangler\.toml: 11 problem\(s\): a deployed gateway would refuse to start$/);
  });

  it('two R2 bindings of one bucket are a problem naming both backends; the same name in another jurisdiction is another bucket', () => {
    const same = variant('same-r2-bucket', (t) => t.replace('bucket_name = "example-shardgate-enam"', 'bucket_name = "example-shardgate-weur"'));
    expect(checkDeployment(same).problems).toEqual([
      expect.stringMatching(
        /^backends r2-weur and r2-enam have the same R2 bucket \(bucket_name "example-shardgate-weur", bound as SHARD_R2_WEUR and SHARD_R2_ENAM\)/,
      ),
    ]);
    const eu = variant('eu-r2-bucket', (t) =>
      t.replace('bucket_name = "example-shardgate-enam"', 'bucket_name = "example-shardgate-weur"\njurisdiction = "eu"'),
    );
    expect(checkDeployment(eu).problems).toEqual([]);
  });

  it('every [env.*] section is checked as the Worker it deploys: the signal or the development config there is a problem', () => {
    const devSource = readFileSync(join(ROOT, 'wrangler.toml'), 'utf8').match(/SHARDGATE_CONFIG = '''[\s\S]*?'''/)![0];
    const envs = variant('envs', (t) => `${t}\n[env.staging.vars]\nSHARDGATE_LOCAL_DEV = "1"\n${devSource}\n`);
    const problems = checkDeployment(envs).problems;
    expect(problems).toContainEqual(expect.stringMatching(/^\[env.staging\] SHARDGATE_LOCAL_DEV is set in \[env.staging.vars\]/));
    expect(problems).toContainEqual(expect.stringMatching(/^\[env.staging\] access key shardgate-dev is the development key/));
    expect(problems.filter((p) => !p.startsWith('[env.staging] '))).toEqual([]);
  });

  it('the local-development signal in [vars], a missing catalog, queue consumer or cron are problems', () => {
    const signal = variant('signal', (t) => t.replace('[vars]\n', '[vars]\nSHARDGATE_LOCAL_DEV = "1"\n'));
    expect(checkDeployment(signal).problems).toEqual([expect.stringMatching(/^SHARDGATE_LOCAL_DEV is set in \[vars\]/)]);
    const bare = variant('bare', (t) => ['[[queues.consumers]]', '[triggers]', '[[durable_objects.bindings]]', '[[migrations]]'].reduce(dropTable, t));
    expect(checkDeployment(bare).problems).toEqual([
      'no Durable Object binding CATALOG (class_name "CatalogObject"): the catalog lives there.',
      'no [[migrations]] entry with new_sqlite_classes = ["CatalogObject"]: the catalog needs SQLite storage.',
      'no consumer for the repair queue shardgate-repair: repair tasks would pile up unprocessed.',
      'no cron trigger ([triggers] crons): superseded shards would never be collected, nor objects scrubbed.',
    ]);
  });

  it('the ops record: without its binding a warning, with the binding but no migration a problem', () => {
    const noBinding = variant('no-ops', (t) => t.replace('[[durable_objects.bindings]]\nname = "OPS"\nclass_name = "OpsObject"\n', ''));
    expect(checkDeployment(noBinding).problems).toEqual([]);
    expect(checkDeployment(noBinding).warnings).toEqual([expect.stringMatching(/^no OPS Durable Object binding/)]);
    const noMigration = variant('no-ops-migration', (t) => t.replace('[[migrations]]\ntag = "v2"\nnew_sqlite_classes = ["OpsObject"]\n', ''));
    expect(checkDeployment(noMigration).problems).toEqual([
      'the OPS binding has no [[migrations]] entry with new_sqlite_classes = ["OpsObject"]: the ops record needs SQLite storage.',
    ]);
  });

  it("SHARDGATE_CONFIG is parsed with the gateway's own schema", () => {
    const typo = variant('typo', (t) => t.replace('"defaultPolicy": "ec-4-2"', '"defaultPolicy": "ec-4-2", "readHedgeMS": 100'));
    expect(checkDeployment(typo).problems).toEqual([expect.stringContaining('SHARDGATE_CONFIG is invalid:\n  (root): Unrecognized key: "readHedgeMS"')]);
    const unbound = variant('unbound', (t) => t.replace('binding = "SHARD_R2_ENAM"', 'binding = "SHARD_R2_OTHER"'));
    expect(checkDeployment(unbound).problems).toEqual([
      expect.stringMatching(/^backend r2-enam names the R2 binding SHARD_R2_ENAM, which this Worker does not have/),
    ]);
    const inline = variant('inline', (t) =>
      t.replace('"secretAccessKeySecret": "SHARDGATE_ADMIN_SECRET"', '"secretAccessKey": "correct horse battery staple"'),
    );
    expect(checkDeployment(inline).problems).toEqual([expect.stringMatching(/^access key example-admin has its secretAccessKey inline/)]);
  });
});

describe('check-deploy --endpoint: the config against what the running gateway records (issue 26)', () => {
  const live = (id: string, storedShards: number, storedBytes = storedShards * 1000): LiveBackend => ({ id, storedShards, storedBytes });
  const config = (...backends: [string, 'active' | 'draining' | 'retired'][]) =>
    ({ backends: backends.map(([id, state]) => ({ id, state })) }) as unknown as Pick<GatewayConfig, 'backends'>;

  it('a retired backend still holding shards is refused, naming the count; an empty one, a draining one and an active one are not', () => {
    const problems = reviewFleetAgainstLive(config(['a', 'active'], ['b', 'retired'], ['c', 'retired'], ['d', 'draining']), [
      live('a', 9),
      live('b', 3, 3072),
      live('c', 0),
      live('d', 5),
    ]);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain('backend b is marked "retired"');
    expect(problems[0]).toContain('3 shard file(s), 3072 bytes');
  });

  it('a backend left out of the config while shards remain on it is refused; one left out empty is not', () => {
    const problems = reviewFleetAgainstLive(config(['a', 'active']), [live('a', 9), live('gone', 2), live('empty', 0)]);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain('backend gone is not in this config');
    expect(problems[0]).toContain('2 shard file(s)');
  });

  it('the command asks the gateway at --endpoint and fails on such a problem', async () => {
    const reply = { backends: [...['r2-weur', 'r2-enam', 'aws-fra', 'b2-ams', 'wasabi-ams', 'gcs-eu'].map((id) => live(id, 4)), live('old-minio', 7)] };
    const paths: string[] = [];
    const server = createServer((req, res) => {
      paths.push(req.url ?? '');
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(reply));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const lines: string[] = [];
      expect(await run(['-c', PRODUCTION, '--endpoint', endpoint], (l) => lines.push(l))).toBe(1);
      expect(paths[0]).toMatch(/^\/_shardgate\/status/);
      expect(lines.filter((l) => l.startsWith('problem:'))).toEqual([
        expect.stringContaining("backend old-minio is not in this config, but the running gateway's catalog records 7 shard file(s)"),
      ]);
      reply.backends.pop();
      lines.length = 0;
      expect(await run(['-c', PRODUCTION, '--endpoint', endpoint], (l) => lines.push(l))).toBe(0);
      expect(lines.at(-1)).toBe(`${PRODUCTION}: fit for deployment`);
    } finally {
      server.close();
    }
  });
});
