/** The start-up self-test refuses a kernel that computes wrong parity, and the loader falls back. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CoderRuntime, pickRuntime, selfTest, type CoderModules } from '../../coder-wasm/runtime.ts';

const DIST = new URL('../../coder-wasm/dist/', import.meta.url).pathname;
const WasmModule = WebAssembly.Module as unknown as new (b: Uint8Array) => WebAssembly.Module;
const scalarModule = () => new WasmModule(readFileSync(DIST + 'scalar.wasm'));

describe('coder self-test', () => {
  it('passes a good kernel', () => {
    expect(selfTest(new CoderRuntime('scalar', scalarModule()))).toBeNull();
  });

  it('fails a kernel whose encode is off by one bit, and one whose reconstruct is wrong', () => {
    const rt = new CoderRuntime('scalar', scalarModule());
    const x = rt.exports;
    const encode = x.sg_encode;
    x.sg_encode = (c, base, stride, len) => {
      encode(c, base, stride, len);
      rt.bytes(base + 4 * stride + 999, 1)[0]! ^= 1;
    };
    expect(selfTest(rt)).toMatch(/encode does not match ISA-L/);

    const rt2 = new CoderRuntime('scalar', scalarModule());
    const reconstruct = rt2.exports.sg_reconstruct;
    rt2.exports.sg_reconstruct = (c, base, stride, len, present, dataOnly) => {
      const r = reconstruct(c, base, stride, len, present, dataOnly);
      rt2.bytes(base + stride + 5, 1)[0]! ^= 0x80;
      return r;
    };
    expect(selfTest(rt2)).toMatch(/reconstructed data differs/);
  });

  it('falls back past kernels the engine cannot load, and refuses to run with none', () => {
    const modules: CoderModules = {
      'relaxed-simd': () => null,
      simd128: () => {
        throw new Error('no SIMD here');
      },
      scalar: scalarModule,
    };
    expect(pickRuntime(modules).kernel).toBe('scalar');
    expect(() => pickRuntime({ ...modules, scalar: () => null })).toThrow(/no coder kernel/);
  });
});
