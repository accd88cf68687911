/**
 * The shape of one `shardgate` command: a file in cli/commands/ exporting `command` (or a default
 * export of this shape), found by the dispatcher, cli/shardgate.ts, without a list to edit. `run` takes the arguments after the
 * command's name and returns the exit code; it writes results to stdout (JSON with --json),
 * progress and messages to stderr. A CliError's message is printed as it is (no stack).
 */
export interface Command {
  name: string;
  /** One line for `shardgate --help`. */
  summary: string;
  /** The text of `shardgate <name> --help`. */
  help: string;
  run(argv: string[]): Promise<number>;
}

/** An error the person running the command can act on: printed without a stack, exit code `code`. */
export class CliError extends Error {
  override readonly name = 'CliError';
  constructor(
    message: string,
    readonly code = 2,
  ) {
    super(message);
  }
}
