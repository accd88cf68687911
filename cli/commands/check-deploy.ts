/**
 * `shardgate check-deploy [-c FILE]`: reviews a wrangler config file as a deployed gateway would
 * (cli/deploy/check.ts) and prints the problems (exit 1), the warnings, and the secrets to set.
 * `npm run check:deploy` runs it after `wrangler deploy --dry-run` on wrangler.production.toml;
 * CI runs that on every change.
 */
import { checkDeployment } from '../deploy/check.ts';
import { reviewFleetAgainstLive } from '../deploy/live-fleet.ts';
import type { Command } from '../command.ts';
import { GatewayClient } from '../gateway-client.ts';

export const name = 'check-deploy';
export const summary = 'review a wrangler config file as a deployed gateway would (schema, secrets, domains)';
export const help = `usage: shardgate check-deploy [-c FILE] [--endpoint URL]

Parses SHARDGATE_CONFIG of FILE (default wrangler.production.toml) with the gateway's schema and
reviews it as a deployed gateway reviews its config at start: the development key, inline
secrets, local pools, failure domains, the catalog, repair queue and cron bindings. Exit 1 when
the deployed gateway would refuse to start.

With --endpoint URL (the running gateway; a key is optional, the public status is enough), the
config is also reviewed against what the gateway's catalog records (issue 26): a backend marked
"retired", or left out, while shards remain on it is a problem naming the count.`;

export async function run(argv: string[], out: (line: string) => void = console.log): Promise<number> {
  let file = 'wrangler.production.toml';
  let endpoint: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '-c' || a === '--config') file = argv[++i] ?? '';
    else if (a === '--endpoint') endpoint = argv[++i] ?? '';
    else if (a === '-h' || a === '--help') return (out(help), 0);
    else return (out(`unknown argument '${a}'\n${help}`), 2);
  }
  if (!file) return (out(`-c needs a file\n${help}`), 2);
  if (endpoint === '') return (out(`--endpoint needs a URL\n${help}`), 2);
  const r = checkDeployment(file);
  if (endpoint !== undefined && r.config) {
    const live = await new GatewayClient({ endpoint }, process.env, false).status();
    r.problems.push(...reviewFleetAgainstLive(r.config, live.backends));
  }
  if (r.config) {
    out(
      `${file}: ${r.config.backends.length} backends in ${new Set(r.config.backends.map((b) => b.domain)).size} failure domains, policies ${Object.keys(r.config.policies).join(', ')}`,
    );
    for (const b of r.config.backends)
      out(
        `  ${b.id.padEnd(14)} ${b.kind.padEnd(3)} ${b.domain.padEnd(28)} prices: ${r.config.backendPrices[b.id]?.source ?? 'unpriced'}${b.state === 'active' ? '' : `   ${b.state}`}`,
      );
  }
  for (const w of r.warnings) out(`warning: ${w}`);
  if (r.secrets.length) out(`secrets to set (npx wrangler secret put NAME -c ${file}): ${r.secrets.join(', ')}`);
  for (const p of r.problems) out(`problem: ${p}`);
  out(r.problems.length ? `${file}: ${r.problems.length} problem(s): a deployed gateway would refuse to start` : `${file}: fit for deployment`);
  return r.problems.length ? 1 : 0;
}

export const command: Command = { name, summary, help, run: (argv) => run(argv) };
