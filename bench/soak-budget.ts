/**
 * The long soak of issue 19: mixed S3 traffic against the gateway in workerd over six s3rver
 * processes (4+2), one download in ten abandoned at a random point, the coding budget sampled
 * every second, traffic paused for a reading at rest every minute (test/support/soak-traffic.ts).
 * Prints a line a minute (held bytes while busy: least and most; holders, waiters; held at rest)
 * and a verdict: no drift when the budget at rest is idle after every minute (nothing held, no
 * waiter, nothing reclaimed) and no request failed.
 *
 *   npm run soak:budget -- --minutes 30 --clients 6
 */
import { parseArgs } from 'node:util';
import { soak } from '../test/support/soak-traffic.ts';
import { DEV_CREDENTIALS, disposeServers, gatewayConfig, startGateway, startServers } from '../test/engine-s3rver/gateway-harness.ts';

const { values } = parseArgs({ options: { minutes: { type: 'string', default: '30' }, clients: { type: 'string', default: '6' } } });
const minutes = Number(values.minutes);
const clients = Number(values.clients);
const MiB = 1024 * 1024;
const mib = (n: number) => (n / MiB).toFixed(1);

const servers = await startServers(6);
const gateway = await startGateway(gatewayConfig(servers, { timeoutMs: 30_000 }));
try {
  const endpoint = (await gateway.directUrl()).origin;
  let minute: { held: number[]; holders: number; waiters: number } = { held: [], holders: 0, waiters: 0 };
  console.log(`soak: ${minutes} min, ${clients} clients, 10% of downloads abandoned; budget sampled every second, read at rest every minute`);
  const result = await soak({
    client: gateway.client({ endpoint }),
    endpoint,
    credentials: DEV_CREDENTIALS,
    bucket: 'soak',
    durationMs: minutes * 60_000,
    roundMs: 60_000,
    clients,
    abandonShare: 0.1,
    onSample: (_atMs, b) => {
      minute.held.push(b.heldBytes);
      minute.holders = Math.max(minute.holders, b.holders);
      minute.waiters = Math.max(minute.waiters, b.waiters);
    },
    onRest: (round, b) => {
      console.log(
        `minute ${round}: busy held MiB ${mib(Math.min(...minute.held))}-${mib(Math.max(...minute.held))}, holders ≤ ${minute.holders}, waiters ≤ ${minute.waiters}; at rest: held ${b.heldBytes} B, holders ${b.holders}, reclaimed ${b.reclaimed}`,
      );
      minute = { held: [], holders: 0, waiters: 0 };
    },
  });
  const total = Object.values(result.requests).reduce((a, b) => a + b, 0);
  console.log(
    `requests: ${total} ${JSON.stringify(result.requests)}; failed: ${result.errors.length}${result.errors.length ? ` (first: ${result.errors[0]})` : ''}; budget samples ${result.samples.length}`,
  );
  const idle = (b: { heldBytes: number; holders: number; waiters: number; reclaimed: number }) =>
    b.heldBytes === 0 && b.holders === 0 && b.waiters === 0 && b.reclaimed === 0;
  console.log(`at rest: ${result.atRest.filter(idle).length} of ${result.atRest.length} readings idle exactly`);
  const ok = result.atRest.every(idle) && result.errors.length === 0;
  console.log(ok ? 'verdict: no drift' : 'verdict: DRIFT or leak');
  process.exitCode = ok ? 0 : 1;
} finally {
  await gateway.dispose();
  await disposeServers(servers);
}
