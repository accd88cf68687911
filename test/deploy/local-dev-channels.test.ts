/**
 * Issue 21's proof that no single setting switches the deployment review off: the production
 * config (wrangler.production.toml) with the development key added and SHARDGATE_LOCAL_DEV=1
 * put through each channel an operator has:
 *   - `[vars]` of the wrangler file;
 *   - `[env.staging.vars]` of an environment section (deployed with `--env staging`);
 *   - a Worker secret (`wrangler secret put SHARDGATE_LOCAL_DEV`);
 *   - `wrangler deploy --var SHARDGATE_LOCAL_DEV:1`.
 * For each, `check-deploy` refuses the file (the signal where it can see it; the development key
 * otherwise: a secret and a --var are not in any file), and the rehearsal (dev/rehearsal.ts: the
 * config run by workerd as deployed, over s3rver backends) refuses the development key for every
 * request as Cloudflare's edge delivers it (a CF-Connecting-IP of the client's public address),
 * admin API included, with the public status saying `refused`. The same request without the
 * edge's header, made on this machine, is served: the signal did reach the Worker (so each case
 * can fail).
 */
import { AwsV4Signer } from 'aws4fetch';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkDeployment } from '../../cli/deploy/check.ts';
import { startRehearsal, type RehearsalOptions } from '../../dev/rehearsal.ts';
import { ROOT } from '../support/worker.ts';

const PRODUCTION = join(ROOT, 'wrangler.production.toml');
const DEV = { accessKeyId: 'shardgate-dev', secretAccessKey: 'shardgate-dev-secret' };
const EDGE = { 'cf-connecting-ip': '203.0.113.7', 'cf-ray': '8f00000000000000-FRA' };
const dir = mkdtempSync(join(tmpdir(), 'shardgate-channels-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const withDevKey = (config: Record<string, unknown>) => {
  const credentials = config.credentials as { accessKeyId: string }[];
  if (!credentials.some((c) => c.accessKeyId === DEV.accessKeyId)) credentials.push({ ...DEV });
};

/** The production file, edited, as a file of its own (main made absolute). */
function variant(name: string, edit: (toml: string) => string): string {
  const path = join(dir, `${name}.toml`);
  writeFileSync(path, edit(readFileSync(PRODUCTION, 'utf8')).replace('main = "worker/index.ts"', `main = "${join(ROOT, 'worker/index.ts')}"`));
  return path;
}

/** SHARDGATE_CONFIG's text with the development key added (what a secret or --var channel deploys with). */
function devKeyInFile(toml: string): string {
  return toml.replace(/"credentials": \[/, `"credentials": [${JSON.stringify({ ...DEV })}, `);
}

/** An [env.staging] section that repeats the top-level bindings (wrangler does not inherit them) and sets the signal. */
function stagingSection(toml: string): string {
  const start = toml.indexOf('[vars]\n');
  const end = toml.indexOf('[[migrations]]');
  const section = toml
    .slice(start, end)
    .replace(/^\[vars\]$/m, '[env.staging.vars]\nSHARDGATE_LOCAL_DEV = "1"')
    .replace(/^\[\[(r2_buckets|durable_objects\.bindings|queues\.producers|queues\.consumers)\]\]$/gm, '[[env.staging.$1]]')
    .replace(/^\[observability\]$/m, '[env.staging.observability]');
  return `${toml}\n${section}`;
}

interface Channel {
  name: string;
  file: () => string;
  rehearsal: Omit<RehearsalOptions, 'port' | 'configFile' | 'log' | 'editConfig'>;
  problem: RegExp;
}

const CHANNELS: Channel[] = [
  {
    name: 'a [vars] entry',
    file: () => variant('vars', (t) => t.replace('[vars]\n', '[vars]\nSHARDGATE_LOCAL_DEV = "1"\n')),
    rehearsal: {},
    problem: /^SHARDGATE_LOCAL_DEV is set in \[vars\]/,
  },
  {
    name: 'an [env.staging.vars] entry',
    file: () => variant('env', stagingSection),
    rehearsal: { env: 'staging' },
    problem: /^\[env\.staging\] SHARDGATE_LOCAL_DEV is set in \[env\.staging\.vars\]/,
  },
  {
    name: 'a Worker secret',
    file: () => variant('secret', devKeyInFile),
    rehearsal: { bindings: { SHARDGATE_LOCAL_DEV: { type: 'secret_text', value: '1' } } },
    problem: /access key shardgate-dev is the development key/,
  },
  {
    name: 'wrangler deploy --var',
    file: () => variant('var', devKeyInFile),
    rehearsal: { bindings: { SHARDGATE_LOCAL_DEV: { type: 'plain_text', value: '1' } } },
    problem: /access key shardgate-dev is the development key/,
  },
];

async function signed(url: string, method: string, headers: Record<string, string> = {}): Promise<Request> {
  const signer = new AwsV4Signer({
    url,
    method,
    headers,
    accessKeyId: DEV.accessKeyId,
    secretAccessKey: DEV.secretAccessKey,
    service: 's3',
    region: 'us-east-1',
  });
  const s = await signer.sign();
  return new Request(s.url, { method: s.method, headers: s.headers });
}

describe('SHARDGATE_LOCAL_DEV=1 through each channel, with the development key in the config', () => {
  for (const channel of CHANNELS) {
    it(`${channel.name}: check-deploy refuses, the rehearsed deployed gateway refuses the development key`, async () => {
      const file = channel.file();
      const review = checkDeployment(file);
      expect(review.problems, channel.name).toContainEqual(expect.stringMatching(channel.problem));

      // A rehearsal per channel: the channel is the wrangler file or binding the gateway starts with.
      const r = await startRehearsal({ port: 0, configFile: file, editConfig: withDevKey, log: () => {}, ...channel.rehearsal });
      try {
        const base = `http://127.0.0.1:${r.gateway.port}`;
        // As the edge delivers a request: refused, whatever the key.
        for (const [method, path] of [
          ['GET', '/'],
          ['PUT', '/dev-bucket'],
          ['POST', '/_shardgate/admin/collect'],
        ]) {
          const res = await fetch(await signed(`${base}${path}`, method!, EDGE));
          const text = await res.text();
          expect(res.status, `${method} ${path}`).toBe(403);
          expect(text, `${method} ${path}`).toContain('shardgate refuses every request');
        }
        const status = await (await fetch(`${base}/_shardgate/status`, { headers: EDGE })).json();
        expect(status).toMatchObject({ refused: true });
        // Made on this machine: the signal is live, the development key works.
        const local = await fetch(await signed(`${base}/`, 'GET'));
        expect(local.status).toBe(200);
        expect(await local.text()).toContain('<ListAllMyBucketsResult');
      } finally {
        await r.close();
      }
    });
  }
});
