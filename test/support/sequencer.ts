/**
 * The order test files start in: longest first, so that the two workers end together instead of
 * one running the slowest file alone at the end (docs/TESTING.md). vitest's own order does that
 * from the durations it cached on this machine; a fresh clone (CI) has none, and vitest then
 * starts the largest files first, whatever they cost. Here a file's duration is vitest's cached
 * one, else the one in test/support/file-times.json (committed; `npm run test:times:save` writes
 * it from the last run's .vitest-times.json), and a file known to neither starts first, as
 * vitest starts unknown files first. Projects keep vitest's order (node, then workerd).
 */
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const COMMITTED: Record<string, number> = JSON.parse(readFileSync(new URL('./file-times.json', import.meta.url), 'utf8')) as Record<string, number>;

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const duration = (f: TestSpecification): number => {
      const file = relative(root, f.moduleId);
      return this.ctx.cache.getFileTestResults(`${f.project.name}:${file}`)?.duration ?? COMMITTED[file] ?? Number.POSITIVE_INFINITY;
    };
    return [...files].sort((a, b) => {
      const group = a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder;
      if (group !== 0) return group;
      if (a.project.name !== b.project.name) return a.project.name < b.project.name ? -1 : 1;
      const da = duration(a),
        db = duration(b);
      return da === db ? 0 : da > db ? -1 : 1;
    });
  }
}
