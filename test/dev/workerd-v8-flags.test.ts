/**
 * The V8 flags every local workerd runs with (dev/workerd/use-v8-flags.ts says why): the edit of
 * the config Miniflare writes, read back by an independent reader and checked against a config
 * whose flags Miniflare's own Cap'n Proto encoder wrote; and workerd itself honouring a flag set
 * so (`--expose-gc` puts `gc` on the global scope), through the wrapper Miniflare runs.
 */
import { Miniflare, serializeConfig } from 'miniflare';
import { afterEach, describe, expect, it } from 'vitest';
import { v8FlagsOf, withV8Flags } from '../../dev/workerd/config-v8-flags.mjs';
import { useWorkerdV8Flags, WORKERD_V8_FLAGS } from '../../dev/workerd/use-v8-flags.ts';

/** A config as Miniflare writes one: a service, a socket, an extension (pointers after v8Flags). */
function minimalConfig(extra: Record<string, unknown> = {}) {
  return new Uint8Array(
    serializeConfig({
      services: [{ name: 'main', worker: { modules: [{ name: 'index.mjs', esModule: 'export default {}' }], compatibilityDate: '2026-04-20' } }],
      sockets: [{ name: 'entry', address: '127.0.0.1:0', service: { name: 'main' } }],
      extensions: [],
      ...extra,
    }),
  );
}

describe('the workerd config edit', () => {
  it('adds the flags in a segment of their own and leaves every other byte of the message as it was', () => {
    const config = minimalConfig();
    expect(v8FlagsOf(config)).toEqual([]);
    const flags = ['--single-threaded-gc', '--expose-gc', '--max-old-space-size=100', 'x'.repeat(17)];
    const edited = withV8Flags(config, flags);
    expect(v8FlagsOf(edited)).toEqual(flags);
    // Segment 0 unchanged but for the one pointer (8 bytes) that now points to the flags.
    const segments = new DataView(config.buffer).getUint32(0, true) + 1;
    const header = Math.ceil((4 + 4 * segments) / 8) * 8;
    const newHeader = Math.ceil((4 + 4 * (segments + 1)) / 8) * 8;
    const before = config.subarray(header);
    const after = edited.subarray(newHeader, newHeader + before.length);
    const differing = [...before.keys()].filter((i) => before[i] !== after[i]);
    expect(differing.length).toBeGreaterThan(0);
    expect(differing.length).toBeLessThanOrEqual(8);
    expect(Math.floor(differing[0]! / 8)).toBe(Math.floor(differing.at(-1)! / 8));
  });

  it('reads flags that Miniflare encoded itself, and refuses to add flags to a config that has some', () => {
    const config = minimalConfig({ v8Flags: ['--expose-gc', '--no-opt'] });
    expect(v8FlagsOf(config)).toEqual(['--expose-gc', '--no-opt']);
    expect(() => withV8Flags(config, ['--single-threaded-gc'])).toThrow(/already set/);
  });
});

describe('workerd through the wrapper', () => {
  const saved = { ...process.env };
  let mf: Miniflare | undefined;
  afterEach(async () => {
    await mf?.dispose();
    mf = undefined;
    for (const k of ['MINIFLARE_WORKERD_PATH', 'SHARDGATE_WORKERD_V8_FLAGS', 'SHARDGATE_WORKERD_BINARY', 'SHARDGATE_NODE']) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
  });
  const typeofGc = async (flags: string | undefined) => {
    delete process.env.MINIFLARE_WORKERD_PATH;
    if (flags === undefined) delete process.env.SHARDGATE_WORKERD_V8_FLAGS;
    else process.env.SHARDGATE_WORKERD_V8_FLAGS = flags;
    useWorkerdV8Flags();
    mf = new Miniflare({ modules: true, script: 'export default { fetch() { return new Response(typeof gc) } }', compatibilityDate: '2026-04-20' });
    const text = await (await mf.dispatchFetch('http://localhost/')).text();
    await mf.dispose();
    mf = undefined;
    return text;
  };

  it('starts workerd with the flags it is given, and with the default ones when given none', async () => {
    expect(await typeofGc('--single-threaded-gc --expose-gc')).toBe('function');
    expect(await typeofGc(undefined)).toBe('undefined'); // the default flags, which do not expose gc
    expect(process.env.SHARDGATE_WORKERD_V8_FLAGS).toBe(WORKERD_V8_FLAGS.join(' '));
    expect(await typeofGc('')).toBe('undefined'); // none at all
  });
});
