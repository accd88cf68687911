/**
 * What only the running gateway knows (issue 26): how many shard files its catalog records on each
 * backend. The offline review (check.ts) cannot see that, so `shardgate check-deploy --endpoint`
 * asks the live status and refuses a config that would make recorded shards unreachable:
 * - a backend marked "retired" (never read) while shards remain on it, naming the count: those
 *   shards would count as missing on every read, and a unit that had any other loss would be
 *   unreadable until the backend is marked "draining" again;
 * - a backend dropped from the config while shards remain on it: the same, with no state left to
 *   drain it by (the "a removed backend counts as missing for ever").
 * A running gateway given such a config still answers (refusing every request would turn a
 * config mistake into an outage): its status's fleet check is critical instead (worker/ops/checks.ts).
 */
import type { GatewayConfig } from '../../worker/config/config.ts';

/** One backend as the live status reports it (GET /_shardgate/status, public part). */
export interface LiveBackend {
  id: string;
  storedShards: number;
  storedBytes: number;
}

/** The problems of deploying `config` over a gateway whose catalog records `live`; none when it is safe. */
export function reviewFleetAgainstLive(config: Pick<GatewayConfig, 'backends'>, live: readonly LiveBackend[]): string[] {
  const problems: string[] = [];
  const held = (b: LiveBackend) => `${b.storedShards} shard file(s), ${b.storedBytes} bytes`;
  for (const b of live) {
    if (b.storedShards <= 0) continue;
    const next = config.backends.find((c) => c.id === b.id);
    if (!next) {
      problems.push(
        `backend ${b.id} is not in this config, but the running gateway's catalog records ${held(b)} on it: keep it, marked "draining", until \`shardgate drain\` shows 0 left, then mark it "retired" (or remove it).`,
      );
    } else if (next.state === 'retired') {
      problems.push(
        `backend ${b.id} is marked "retired", but the running gateway's catalog records ${held(b)} on it: a retired backend is never read, so those shards would count as missing. Mark it "draining" until \`shardgate drain\` shows 0 left.`,
      );
    }
  }
  return problems;
}
