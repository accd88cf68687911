// Runs a bench script under tsx with WebAssembly relaxed SIMD on: Node 20 needs
// --experimental-wasm-relaxed-simd, Node 22 has it on by default and refuses the flag.
import { spawnSync } from 'node:child_process';

const major = Number(process.versions.node.split('.')[0]);
const flags = major < 22 ? ['--experimental-wasm-relaxed-simd'] : [];
const [script, ...args] = process.argv.slice(2);
const shims = new URL('./lib/register-shims.mjs', import.meta.url).href;
const run = spawnSync(process.execPath, [...flags, '--import', shims, '--import', 'tsx', script, ...args], { stdio: 'inherit' });
process.exit(run.status ?? 1);
