// wrangler and the workers vitest pool import `.wasm` files as compiled modules (CompiledWasm).
declare module '*.wasm' {
  const module: WebAssembly.Module;
  export default module;
}
