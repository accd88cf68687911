#!/usr/bin/env -S node --import tsx
/**
 * `shardgate <command> [args]`: the operator's command line, one file per command under
 * cli/commands/, each exporting { name, summary, help, run(argv) } (run resolves to the exit
 * code). Minimal on this branch (issue 14: cost, check-deploy); the dispatcher of issue 13 has
 * the same shape and replaces this one when both are merged.
 */
import * as checkDeploy from './commands/check-deploy.ts';
import * as cost from './commands/cost.ts';

interface Command {
  name: string;
  summary: string;
  help: string;
  run(argv: string[]): Promise<number>;
}

const COMMANDS: Command[] = [cost, checkDeploy];

function usage(): string {
  return `usage: shardgate <command> [args]   (npx shardgate, or npm run shardgate --)\n\n${COMMANDS.map((c) => `  ${c.name.padEnd(14)} ${c.summary}`).join('\n')}\n\nshardgate <command> --help says more.`;
}

const [commandName, ...rest] = process.argv.slice(2);
const command = COMMANDS.find((c) => c.name === commandName);
if (!command) {
  console.log(usage());
  process.exit(commandName === undefined || commandName === '--help' || commandName === '-h' ? 0 : 2);
}
process.exitCode = await command.run(rest);
