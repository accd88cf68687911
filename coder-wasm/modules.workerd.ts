/**
 * The coder modules as workerd gets them: imported as compiled modules (Workers forbid
 * compiling wasm from bytes at run time). workerd validates relaxed SIMD, so all three load.
 */
import relaxed from './dist/relaxed.wasm';
import scalar from './dist/scalar.wasm';
import simd128 from './dist/simd128.wasm';
import type { CoderModules } from './runtime.ts';

export const coderModules: CoderModules = {
  'relaxed-simd': () => relaxed,
  simd128: () => simd128,
  scalar: () => scalar,
};
