/**
 * `shardgate`: the operator's command line. A small dispatcher: every file in cli/commands/ that
 * exports a `command` (cli/command.ts) is a command, so adding one is adding a file.
 *   shardgate --help              the commands
 *   shardgate <command> --help    one command's options
 * Exit codes: 0 done, 1 the command found a problem (damage, failures), 2 a usage or connection
 * error.
 */
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { CliError, type Command } from './command.ts';

const COMMANDS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'commands');

function commandFiles(): string[] {
  return readdirSync(COMMANDS_DIR)
    .filter((f) => /\.ts$/.test(f) && !f.endsWith('.d.ts'))
    .sort();
}

async function loadCommand(file: string): Promise<Command | undefined> {
  const mod = (await import(pathToFileURL(join(COMMANDS_DIR, file)).href)) as { command?: Command; default?: Command };
  return mod.command ?? mod.default; // `export const command` (as these) or a default export
}

/** Every command, for the usage text. */
export async function loadCommands(): Promise<Command[]> {
  const commands: Command[] = [];
  for (const file of commandFiles()) {
    const command = await loadCommand(file);
    if (command) commands.push(command);
  }
  return commands;
}

/**
 * The command `name`, loading only its own file, cli/commands/<name>.ts (a test holds every file
 * to that naming): a command's imports are its own cost, not every command's. check-deploy's
 * wrangler alone took 3 CPU-seconds and 300 MB at every `shardgate` start when all were loaded.
 */
export async function findCommand(name: string): Promise<Command | undefined> {
  const file = `${name}.ts`;
  if (!/^[a-z][a-z0-9-]*$/.test(name) || !commandFiles().includes(file)) return undefined;
  const command = await loadCommand(file);
  return command?.name === name ? command : undefined;
}

function usage(commands: Command[]): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    'usage: shardgate <command> [options]        (npx shardgate ... from a clone)',
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'shardgate <command> --help shows the options of one command. Commands that talk to a running',
    'gateway take --endpoint (SHARDGATE_ENDPOINT, default http://127.0.0.1:8787) and sign with',
    'AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or --access-key-id / --secret-access-key).',
  ].join('\n');
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    const about = name === 'help' && rest[0] ? await findCommand(rest[0]) : undefined;
    process.stdout.write((about ? about.help : usage(await loadCommands())) + '\n');
    return 0;
  }
  const command = await findCommand(name);
  if (!command) {
    process.stderr.write(`shardgate: unknown command '${name}'\n\n${usage(await loadCommands())}\n`);
    return 2;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(command.help + '\n');
    return 0;
  }
  try {
    return await command.run(rest);
  } catch (err) {
    if (err instanceof CliError) {
      process.stderr.write(`shardgate ${name}: ${err.message}\n`);
      return err.code;
    }
    if (
      (err as { code?: string })?.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ||
      (err as { code?: string })?.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' ||
      (err as { code?: string })?.code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL'
    ) {
      process.stderr.write(`shardgate ${name}: ${(err as Error).message}\n(shardgate ${name} --help lists the options)\n`);
      return 2;
    }
    throw err;
  }
}
