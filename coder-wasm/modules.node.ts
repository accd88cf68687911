/**
 * The coder modules as Node gets them: read from dist/ and compiled on first use. A module the
 * engine cannot validate (relaxed SIMD without `--experimental-wasm-relaxed-simd` on Node 20)
 * loads as null, and the runtime falls back to the next kernel.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// workers-types declares WebAssembly.Module abstract (Workers cannot compile bytes); Node can.
const WasmModule = WebAssembly.Module as unknown as new (bytes: Uint8Array) => WebAssembly.Module;
const DIST = join(dirname(fileURLToPath(import.meta.url)), 'dist');
import type { CoderModules } from './runtime.ts';

function load(file: string): () => WebAssembly.Module | null {
  return () => {
    const bytes = readFileSync(join(DIST, file));
    return WebAssembly.validate(bytes) ? new WasmModule(bytes) : null;
  };
}

export const coderModules: CoderModules = {
  'relaxed-simd': load('relaxed.wasm'),
  simd128: load('simd128.wasm'),
  scalar: load('scalar.wasm'),
};
