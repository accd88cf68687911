/**
 * The liveness probe of the suites that share one gateway (wedged.ts `unanswered`): a connection
 * reset is asked once more before it counts (a keep-alive socket the gateway closed while idle);
 * only its own deadline means "no answer"; a refused connection is reported with its cause.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { unanswered } from './wedged.ts';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((r) => (server ? server.close(r) : r(undefined)));
  server = undefined;
});

/** A server whose n-th request (from 1) `answer` handles: true answers 200, false resets the connection, null never answers. */
async function serve(answer: (n: number) => boolean | null): Promise<URL> {
  let n = 0;
  server = createServer((req, res) => {
    const a = answer(++n);
    if (a === true) res.end();
    else if (a === false) req.socket.destroy();
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/probe`);
}

describe('unanswered', () => {
  it('a connection reset once is asked again: the gateway answers', async () => {
    const url = await serve((n) => n > 1);
    expect(await unanswered(url, 5000)).toBeUndefined();
  });

  it('reset every time: reported with what failed', async () => {
    const url = await serve(() => false);
    expect(await unanswered(url, 5000)).toMatch(/^the gateway did not answer a HEAD within 5 s \(fetch failed: .+\)/);
  });

  it('no answer: reported once its own deadline passed, not asked again', async () => {
    let asked = 0;
    const url = await serve(() => (asked++, null));
    expect(await unanswered(url, 300)).toMatch(/^the gateway did not answer a HEAD within 0.3 s/);
    expect(asked).toBe(1);
  });
});
