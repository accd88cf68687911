// V8 flags put into the workerd config Miniflare writes (run-workerd.sh runs this between them).
//
// workerd takes V8 flags only from its config (Config.v8Flags, pointer 2 of the root struct in
// workerd.capnp), and Miniflare, which writes that config, offers no option for them. So the
// config, a Cap'n Proto message in the standard stream framing, gets one more segment holding
// the flags as a List(Text), and the root's v8Flags pointer, null as Miniflare leaves it, becomes
// a far pointer to it. Nothing else in the message moves. Plain JavaScript: it runs before every
// workerd start, where loading tsx would cost a few hundred milliseconds each time.
//
// As a command: `node config-v8-flags.mjs OUT`: the config on stdin, the edited config written to
// OUT, the workerd binary to run printed on stdout (SHARDGATE_WORKERD_BINARY, else Miniflare's
// own); the flags are SHARDGATE_WORKERD_V8_FLAGS, separated by spaces.
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const V8_FLAGS_POINTER = 2;

/**
 * The message's segment table and where the root's v8Flags pointer is. Throws if the message is
 * shorter than its table, or the root is not a struct with that pointer.
 * @param {Uint8Array} config
 */
function layout(config) {
  const view = new DataView(config.buffer, config.byteOffset, config.byteLength);
  const segmentCount = view.getUint32(0, true) + 1;
  const headerWords = Math.ceil((4 + 4 * segmentCount) / 8);
  /** Byte offset of each segment in `config`, and its size in words. */
  const segments = [];
  let end = headerWords * 8;
  for (let i = 0; i < segmentCount; i++) {
    const words = view.getUint32(4 + 4 * i, true);
    segments.push({ at: end, words });
    end += words * 8;
  }
  if (end > config.byteLength) throw new Error('workerd config: shorter than its segment table says');
  const [root, lo, hi] = land(view, segments, segments[0].at);
  if ((lo & 3) !== 0) throw new Error('workerd config: the root is not a struct');
  if (hi >>> 16 <= V8_FLAGS_POINTER) throw new Error('workerd config: the root has no v8Flags pointer');
  const slot = root + (1 + (lo >> 2) + (hi & 0xffff) + V8_FLAGS_POINTER) * 8;
  return { view, headerWords, segments, end, slot };
}

/**
 * The pointer at byte `p`, or the one its single far pointer lands on: [its byte offset, lo, hi].
 * @param {DataView} view
 * @param {{ at: number }[]} segments
 * @param {number} p
 * @returns {[number, number, number]}
 */
function land(view, segments, p) {
  const lo = view.getUint32(p, true);
  if ((lo & 3) !== 2) return [p, lo, view.getUint32(p + 4, true)];
  if (lo & 4) throw new Error('workerd config: a double-far pointer');
  const pad = segments[view.getUint32(p + 4, true)].at + (lo >>> 3) * 8;
  return [pad, view.getUint32(pad, true), view.getUint32(pad + 4, true)];
}

/**
 * `config` (one unpacked Cap'n Proto message, a workerd Config) with `flags` as its v8Flags.
 * Throws if the root already has v8Flags or is not a struct with that pointer.
 * @param {Uint8Array} config
 * @param {string[]} flags
 * @returns {Uint8Array}
 */
export function withV8Flags(config, flags) {
  const { view, headerWords, segments, end, slot } = layout(config);
  const segmentCount = segments.length;
  if (view.getUint32(slot, true) !== 0 || view.getUint32(slot + 4, true) !== 0) throw new Error('workerd config: v8Flags already set');

  // The new segment: a landing pad (a list pointer to the flags' pointers), one text pointer per
  // flag, then each flag's bytes with its NUL, padded to a word.
  const texts = flags.map((f) => new TextEncoder().encode(`${f}\0`));
  const textWords = texts.map((t) => Math.ceil(t.length / 8));
  const words = 1 + flags.length + textWords.reduce((a, b) => a + b, 0);
  const added = new Uint8Array(words * 8);
  const out = new DataView(added.buffer);
  out.setUint32(0, 1, true); // list pointer, offset 0: the list follows the pad
  out.setUint32(4, 6 | (flags.length << 3), true); // element size 6: pointers
  let target = 1 + flags.length;
  for (const [i, text] of texts.entries()) {
    const pointer = 1 + i;
    out.setUint32(pointer * 8, 1 | ((target - pointer - 1) << 2), true);
    out.setUint32(pointer * 8 + 4, 2 | (text.length << 3), true); // element size 2: bytes
    added.set(text, target * 8);
    target += textWords[i];
  }

  const newHeaderWords = Math.ceil((4 + 4 * (segmentCount + 1)) / 8);
  const body = config.subarray(headerWords * 8, end);
  const result = new Uint8Array(newHeaderWords * 8 + body.length + added.length);
  const header = new DataView(result.buffer);
  header.setUint32(0, segmentCount, true);
  for (let i = 0; i < segmentCount; i++) header.setUint32(4 + 4 * i, segments[i].words, true);
  header.setUint32(4 + 4 * segmentCount, words, true);
  result.set(body, newHeaderWords * 8);
  result.set(added, newHeaderWords * 8 + body.length);
  // The v8Flags slot, moved by the longer header: a far pointer to the pad (word 0 of the new segment).
  const moved = slot - headerWords * 8 + newHeaderWords * 8;
  header.setUint32(moved, 2, true);
  header.setUint32(moved + 4, segmentCount, true);
  return result;
}

/**
 * The flags of a config (for tests): the root's v8Flags, followed through a far pointer.
 * @param {Uint8Array} config
 * @returns {string[]}
 */
export function v8FlagsOf(config) {
  const { view, segments, slot } = layout(config);
  const [listAt, listLo, listHi] = land(view, segments, slot);
  if (listLo === 0 && listHi === 0) return [];
  const first = listAt + 8 + (listLo >> 2) * 8;
  const flags = [];
  for (let i = 0; i < listHi >>> 3; i++) {
    const p = first + i * 8;
    const lo = view.getUint32(p, true);
    const len = view.getUint32(p + 4, true) >>> 3;
    const start = p + 8 + (lo >> 2) * 8;
    flags.push(new TextDecoder().decode(config.subarray(start, start + len - 1)));
  }
  return flags;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const config = readFileSync(0);
  const flags = (process.env.SHARDGATE_WORKERD_V8_FLAGS ?? '').split(' ').filter(Boolean);
  writeFileSync(process.argv[2], flags.length ? withV8Flags(config, flags) : config);
  // The binary Miniflare itself would run: its own `workerd` dependency, found from wrangler's.
  const miniflare = createRequire(createRequire(import.meta.url).resolve('wrangler')).resolve('miniflare');
  process.stdout.write(process.env.SHARDGATE_WORKERD_BINARY || createRequire(miniflare)('workerd').default);
}
