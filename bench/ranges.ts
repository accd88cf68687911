/**
 * npm run bench:ranges -- bench/results/A.json bench/results/B.json ...
 *
 * Several saved runs of `npm run bench -- --write --label NAME` side by side: every target's
 * figure in each run, its range, and in how many runs it was met; the request counts and the
 * degraded/healthy ratios of the wide codes. Prints Markdown (for BENCHMARKS.md). It measures
 * nothing itself.
 */
import { readFileSync } from 'node:fs';

interface Target {
  target: string;
  figure: string;
  met: boolean | null;
  count?: boolean;
}
interface Saved {
  run: { command: string; git: string; cpu: string; cores: number; node: string; loadStart: string; loadEnd?: string; minutes?: number };
  targets: Target[];
  checks: { total: number; bad: unknown[] };
}

const files = process.argv.slice(2).filter((a) => a.endsWith('.json'));
if (files.length === 0) throw new Error('usage: bench/ranges.ts RUN.json ...');
const runs = files.map((f) => ({ file: f, ...(JSON.parse(readFileSync(f, 'utf8')) as Saved) }));

const lead = (figure: string): number | null => {
  const m = /-?\d+(\.\d+)?/.exec(figure);
  return m ? Number(m[0]) : null;
};
const cell = (s: string) => s.replace(/\|/g, '\\|');

const out: string[] = [];
out.push(`${runs.length} runs of \`${runs[0]!.run.command}\`:`);
out.push('');
for (const [i, r] of runs.entries()) {
  out.push(
    `- run ${i + 1}: HEAD ${r.run.git}, ${r.run.cpu}, ${r.run.cores} cores, Node ${r.run.node}; load average at start ${r.run.loadStart}${r.run.loadEnd ? `, at end ${r.run.loadEnd}` : ''}${r.run.minutes ? `; ${r.run.minutes.toFixed(1)} minutes` : ''}; GET bodies checked ${r.checks.total - r.checks.bad.length}/${r.checks.total} correct (${r.file})`,
  );
}
out.push('');
const names = [...new Set(runs.flatMap((r) => r.targets.map((t) => t.target)))];
out.push(`| target | ${runs.map((_, i) => `run ${i + 1}`).join(' | ')} | range | met |`);
out.push(`|---|${runs.map(() => '---|').join('')}---|---|`);
for (const name of names) {
  const ts = runs.map((r) => r.targets.find((t) => t.target === name));
  const vals = ts.map((t) => (t ? lead(t.figure) : null)).filter((v): v is number => v !== null);
  const range = vals.length ? (Math.min(...vals) === Math.max(...vals) ? `${Math.min(...vals)}` : `${Math.min(...vals)}-${Math.max(...vals)}`) : '-';
  const judged = ts.filter((t) => t && t.met !== null);
  const met = judged.length ? `${judged.filter((t) => t!.met).length}/${judged.length}` : '-';
  out.push(`| ${cell(name)} | ${ts.map((t) => (t ? cell(t.figure) : '-')).join(' | ')} | ${range} | ${met} |`);
}
console.log(out.join('\n'));
