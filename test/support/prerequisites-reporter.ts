/**
 * A vitest reporter that closes the run with what was skipped for missing system tools (the
 * tests' needs() options record why in their meta): one line per tool with its reason and files,
 * then one line with the count and the single apt-get command that brings them back. Says nothing
 * when no test was skipped for a tool.
 */
import type { Reporter, TestModule } from 'vitest/node';
import { installLine, TOOLS } from './prerequisites.ts';

export interface SkippedForTools {
  tests: number;
  /** tool id -> why its tests were skipped, and their files. */
  byTool: Map<string, { reason: string; files: Set<string> }>;
}

export function skippedForTools(modules: ReadonlyArray<TestModule>): SkippedForTools {
  const byTool: SkippedForTools['byTool'] = new Map();
  let tests = 0;
  for (const module of modules) {
    for (const test of module.children.allTests()) {
      const missing = test.meta().missingTools;
      if (test.result().state !== 'skipped' || !missing) continue;
      tests++;
      for (const [id, reason] of Object.entries(missing)) {
        if (!byTool.has(id)) byTool.set(id, { reason, files: new Set() });
        byTool.get(id)!.files.add(module.relativeModuleId);
      }
    }
  }
  return { tests, byTool };
}

export function summaryLines(s: SkippedForTools): string[] {
  if (!s.tests) return [];
  const tools = TOOLS.filter((t) => s.byTool.has(t.id));
  const lines = tools.map((t) => `  ${s.byTool.get(t.id)!.reason}: ${[...s.byTool.get(t.id)!.files].sort().join(', ')}`);
  const missing = [...new Set(tools.filter((t) => s.byTool.get(t.id)!.reason.includes('missing')).map((t) => t.debianPackage))];
  const remedy = missing.length ? `to run them: ${installLine(missing)}` : 'to run them: unset SHARDGATE_SKIP_CLI / SHARDGATE_SKIP_BROWSER';
  return [...lines, `${s.tests} test(s) skipped for want of system tools; ${remedy}`];
}

export default class PrerequisitesReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const lines = summaryLines(skippedForTools(modules));
    if (lines.length) console.log(`\n${lines.join('\n')}`);
  }
}
