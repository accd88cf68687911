#!/usr/bin/env node
// Rewrites every `i8x16.swizzle` (0xfd 0x0e) in a wasm module's code section to
// `i8x16.relaxed_swizzle` (0xfd 0x80 0x02), the route to relaxed SIMD from rustc 1.63, which
// has no relaxed intrinsics.
//
// Why this is sound: the relaxed-SIMD spec leaves relaxed_swizzle implementation-defined only
// for lane indices >= 16; for indices < 16 both instructions select the same byte. The module
// fed here is built from kernel_simd.rs, where every swizzle index is masked to 0..16.
// Why it is a full decoder and not a byte search: 0xfd 0x0e can occur inside immediates
// (constants, memarg offsets), so every instruction is decoded, and an opcode this walker does
// not know stops the build instead of being guessed at.
//
// Usage: node relax-swizzle.mjs in.wasm out.wasm
import { readFileSync, writeFileSync } from 'node:fs';

function readU(buf, pos) {
  let result = 0n,
    shift = 0n,
    b;
  do {
    b = buf[pos++];
    result |= BigInt(b & 0x7f) << shift;
    shift += 7n;
  } while (b & 0x80);
  return [Number(result), pos];
}
const skipLeb = (buf, pos) => {
  while (buf[pos++] & 0x80);
  return pos;
};
function encodeU(n) {
  const out = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n) b |= 0x80;
    out.push(b);
  } while (n);
  return out;
}

const VALTYPES = new Set([0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f]);

/** Returns the position after the instruction at `pos`, and whether it is i8x16.swizzle. */
function step(b, pos) {
  const op = b[pos++];
  if (op === 0x02 || op === 0x03 || op === 0x04) {
    return [b[pos] === 0x40 || VALTYPES.has(b[pos]) ? pos + 1 : skipLeb(b, pos), false];
  }
  if ([0x00, 0x01, 0x05, 0x0b, 0x0f, 0x1a, 0x1b, 0xd1].includes(op) || (op >= 0x45 && op <= 0xc4)) return [pos, false];
  if (op === 0x0c || op === 0x0d || op === 0x10 || op === 0xd2 || (op >= 0x20 && op <= 0x26)) return [skipLeb(b, pos), false];
  if (op === 0x0e) {
    let n;
    [n, pos] = readU(b, pos);
    for (let i = 0; i <= n; i++) pos = skipLeb(b, pos);
    return [pos, false];
  }
  if (op === 0x11) return [skipLeb(b, skipLeb(b, pos)), false];
  if (op === 0x1c) {
    let n;
    [n, pos] = readU(b, pos);
    return [pos + n, false];
  }
  if (op >= 0x28 && op <= 0x3e) return [skipLeb(b, skipLeb(b, pos)), false];
  if (op === 0x3f || op === 0x40) return [skipLeb(b, pos), false];
  if (op === 0x41 || op === 0x42) return [skipLeb(b, pos), false];
  if (op === 0x43) return [pos + 4, false];
  if (op === 0x44) return [pos + 8, false];
  if (op === 0xd0) return [pos + 1, false];
  if (op === 0xfc) {
    let sub;
    [sub, pos] = readU(b, pos);
    if (sub <= 7) return [pos, false];
    const immediates = { 8: 2, 9: 1, 10: 2, 11: 1, 12: 2, 13: 1, 14: 2, 15: 1, 16: 1, 17: 1 }[sub];
    if (immediates === undefined) throw new Error(`unknown 0xfc ${sub} at ${pos}`);
    for (let i = 0; i < immediates; i++) pos = skipLeb(b, pos);
    return [pos, false];
  }
  if (op === 0xfd) {
    let sub;
    [sub, pos] = readU(b, pos);
    if (sub <= 11 || sub === 92 || sub === 93) return [skipLeb(b, skipLeb(b, pos)), false]; // memarg
    if (sub === 12 || sub === 13) return [pos + 16, false]; // v128.const, i8x16.shuffle
    if (sub >= 21 && sub <= 34) return [pos + 1, false]; // lane index
    if (sub >= 84 && sub <= 91) return [skipLeb(b, skipLeb(b, pos)) + 1, false]; // memarg + lane
    if (sub <= 0xff || (sub >= 0x100 && sub <= 0x113)) return [pos, sub === 14];
    throw new Error(`unknown 0xfd ${sub} at ${pos}`);
  }
  throw new Error(`unknown opcode 0x${op.toString(16)} at ${pos - 1}`);
}

function relaxBody(body) {
  let pos = 0,
    n;
  [n, pos] = readU(body, pos); // local declarations
  for (let i = 0; i < n; i++) pos = skipLeb(body, pos) + 1;
  const out = [...body.subarray(0, pos)];
  let count = 0;
  while (pos < body.length) {
    const [next, isSwizzle] = step(body, pos);
    if (isSwizzle) {
      out.push(0xfd, 0x80, 0x02);
      count++;
    } else out.push(...body.subarray(pos, next));
    pos = next;
  }
  if (pos !== body.length) throw new Error('instruction overran its function body');
  return [out, count];
}

export function relaxSwizzles(wasm) {
  if (wasm.readUInt32LE(0) !== 0x6d736100) throw new Error('not a wasm module');
  const out = [...wasm.subarray(0, 8)];
  let pos = 8,
    total = 0;
  while (pos < wasm.length) {
    const id = wasm[pos];
    let size, start;
    [size, start] = readU(wasm, pos + 1);
    const end = start + size;
    if (id !== 10) {
      out.push(...wasm.subarray(pos, end));
      pos = end;
      continue;
    }
    let n, p;
    [n, p] = readU(wasm, start);
    const section = [...encodeU(n)];
    for (let i = 0; i < n; i++) {
      let len;
      [len, p] = readU(wasm, p);
      const [body, count] = relaxBody(wasm.subarray(p, p + len));
      total += count;
      section.push(...encodeU(body.length), ...body);
      p += len;
    }
    out.push(10, ...encodeU(section.length), ...section);
    pos = end;
  }
  return [Buffer.from(out), total];
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop())) {
  const [input, output] = process.argv.slice(2);
  const [relaxed, count] = relaxSwizzles(readFileSync(input));
  if (count === 0) throw new Error('no i8x16.swizzle found: is this the simd128 build?');
  writeFileSync(output, relaxed);
  console.log(`relax-swizzle: rewrote ${count} i8x16.swizzle -> i8x16.relaxed_swizzle`);
}
