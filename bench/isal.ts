/**
 * Builds and runs bench/isal-bench.c (ISA-L, the physical anchor for the coder) when Debian's
 * libisal-dev is installed: `apt-get install libisal-dev`. Returns rows in bench:coder's shape.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));

export interface IsalRow {
  kernel: string;
  op: string;
  k: number;
  m: number;
  shardBytes: number;
  gbps: number;
}

export function runIsal(shapes: [number, number][], sizes: number[], quick: boolean): IsalRow[] {
  if (!existsSync('/usr/include/isa-l/erasure_code.h')) {
    console.error('bench:coder --native: ISA-L headers not found; apt-get install libisal-dev');
    return [];
  }
  const outDir = join(HERE, '..', '.tmp');
  mkdirSync(outDir, { recursive: true });
  const bin = join(outDir, 'isal-bench');
  execFileSync('cc', ['-O2', '-o', bin, join(HERE, 'isal-bench.c'), '-lisal']);
  const cases = sizes.flatMap((len) => shapes.flatMap(([k, m]) => [k, m, len].map(String)));
  const out = execFileSync(bin, [quick ? '3' : '7', quick ? '0.02' : '0.15', ...cases], { encoding: 'utf8' });
  return out
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as IsalRow);
}
