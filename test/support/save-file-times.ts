/**
 * `npm run test:times:save`: writes test/support/file-times.json (each file's time in the last
 * whole run, from .vitest-times.json) for the sequencer (sequencer.ts) of a fresh clone.
 * Run it after a whole `npm test` when files were added or their times changed much, and commit it.
 */
import { readFileSync, writeFileSync } from 'node:fs';

const table = JSON.parse(readFileSync('.vitest-times.json', 'utf8')) as { files: { file: string; ms: number }[] };
const times = Object.fromEntries(table.files.sort((a, b) => b.ms - a.ms).map((f) => [f.file, Math.round(f.ms)]));
writeFileSync('test/support/file-times.json', JSON.stringify(times, null, 1) + '\n');
console.log(`test/support/file-times.json: ${Object.keys(times).length} files`);
