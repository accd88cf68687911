/**
 * `npm start --no-watch` (and every test's gateway) runs a snapshot of the Worker: an edit to its
 * source while it runs changes nothing, where wrangler's own bundler would rebuild and reload it,
 * cutting off the requests in flight. The watched gateway, over the same edit, does reload: the
 * control that shows the edit is one wrangler notices. Both read the config dir's .dev.vars.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startLocalGateway, type LocalGateway } from '../../dev/local-gateway.ts';

const dir = mkdtempSync(join(tmpdir(), 'shardgate-no-watch-'));
// The answer carries a variable from the config dir's .dev.vars: the snapshot must keep reading it.
const source = (answer: string) => `export default { fetch: (_, env) => new Response(${JSON.stringify(answer)} + ' ' + env.GREETING) };\n`;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function gatewayOver(name: string, watch: boolean): Promise<{ gw: LocalGateway; entry: string }> {
  const root = join(dir, name);
  const entry = join(root, 'src', 'worker.ts');
  rmSync(root, { recursive: true, force: true });
  mkdirSync(join(root, 'src'), { recursive: true });
  writeFileSync(entry, source('before'));
  writeFileSync(join(root, '.dev.vars'), 'GREETING="hi"\n');
  writeFileSync(join(root, 'wrangler.toml'), 'name = "no-watch"\nmain = "src/worker.ts"\ncompatibility_date = "2026-04-20"\n');
  // One per test: watch is a start option, and each test edits the source of its own Worker.
  const gw = await startLocalGateway({
    port: 0,
    hosts: ['127.0.0.1'],
    stateDir: join(root, 'state'),
    cronSeconds: 0,
    watch,
    config: join(root, 'wrangler.toml'),
  });
  return { gw, entry };
}

const answer = async (gw: LocalGateway) => (await fetch(gw.url)).text();

describe('the local gateway and edits to the Worker source', () => {
  it('without watch: keeps answering from the code it started with', async () => {
    const { gw, entry } = await gatewayOver('snapshot', false);
    try {
      expect(await answer(gw)).toBe('before hi');
      writeFileSync(entry, source('after'));
      // The watched control below reloads within about a second; give this one five.
      for (let i = 0; i < 10; i++) {
        await new Promise((r) => setTimeout(r, 500));
        expect(await answer(gw)).toBe('before hi');
      }
    } finally {
      await gw.close();
    }
  }, 60_000);

  it('with watch (the control): reloads onto the edited code', async () => {
    const { gw, entry } = await gatewayOver('watched', true);
    try {
      expect(await answer(gw)).toBe('before hi');
      writeFileSync(entry, source('after'));
      let seen = 'before hi';
      for (let i = 0; i < 60 && seen !== 'after hi'; i++) {
        await new Promise((r) => setTimeout(r, 500));
        seen = await answer(gw).catch(() => 'reloading');
      }
      expect(seen).toBe('after hi');
    } finally {
      await gw.close();
    }
  }, 60_000);
});
