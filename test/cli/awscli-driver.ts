/**
 * awscli commands run by one Python interpreter for a whole test file (awscli-driver.py), instead
 * of a process per command. An awscli process spends about 1 CPU-second on this 2-core machine
 * starting Python and importing awscli and botocore before it sends anything; a command in a
 * running interpreter about 0.15 (docs/TESTING.md). test/cli's awscli cases make about a hundred
 * calls: that start-up was most of the suite's longest file.
 *
 * What still runs per command is what a user's `aws ...` runs after its imports: awscli's own
 * entry point (`awscli.clidriver.main()` over `sys.argv`, as the `aws` script calls it), with a fresh
 * botocore session, the command's environment (only the variables the test gives: tools.ts cleanEnv) and
 * working directory, and its stdout and stderr as the process's file descriptors. What it does
 * not run per command is the interpreter's start, which sends no request; the suite's first awscli
 * call of a file still runs `aws` as a process of its own (the cases choose which).
 *
 * Used when the client is a Python script (Debian's awscli, a pip one); any other `aws` (AWS's
 * own bundled binary) runs a process per command as before (`start` answers null).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { runFailure, type CliTool, type RunResult } from './tools.ts';

/** As runTool's: a command still running after this is killed (here: with the driver). */
const COMMAND_TIMEOUT_MS = 300_000;
const SCRIPT = fileURLToPath(new URL('./awscli-driver.py', import.meta.url));

interface Answer {
  code: number;
  stdout: string;
  stderr: string;
}

export class AwscliDriver {
  private readonly answers: ((a: Answer | Error) => void)[] = [];
  /** Commands run one at a time, in the order asked. */
  private queue: Promise<unknown> = Promise.resolve();
  private exited: Error | null = null;
  private output = '';

  private constructor(
    private readonly tool: CliTool,
    private readonly child: ChildProcess,
  ) {
    const requests = child.stdio[3] as Writable;
    requests.on('error', () => {}); // a write after the driver died: its exit says why
    const lines = createInterface({ input: child.stdio[4] as Readable });
    lines.on('line', (line) => this.answers.shift()?.(JSON.parse(line) as Answer));
    const keep = (chunk: Buffer) => (this.output = (this.output + chunk.toString('utf8')).slice(-4000));
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    child.on('exit', (code, signal) => {
      this.exited = new Error(`the awscli driver exited (${signal ?? `code ${code}`}); its output:\n${this.output}`);
      for (const answer of this.answers.splice(0)) answer(this.exited);
    });
  }

  /**
   * A driver for `tool` when it is a Python script whose interpreter imports awscli; null for any
   * other kind of `aws`. Answers once the interpreter has run `aws --version`.
   */
  static async start(tool: CliTool, env: NodeJS.ProcessEnv, cwd: string): Promise<AwscliDriver | null> {
    const interpreter = pythonOf(tool.path);
    if (!interpreter) return null;
    const child = spawn(interpreter, [SCRIPT], { cwd, env, stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'] });
    const driver = new AwscliDriver(tool, child);
    await driver.run(['--version'], env, cwd);
    return driver;
  }

  /** As runTool: the command's output, or an error with its command line and output when its exit code is not 0. */
  run(args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<RunResult> {
    const turn = this.queue.then(() => this.ask(args, env, cwd));
    this.queue = turn.catch(() => {});
    return turn;
  }

  private async ask(args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<RunResult> {
    if (this.exited) throw this.exited;
    const answered = new Promise<Answer | Error>((resolve) => this.answers.push(resolve));
    (this.child.stdio[3] as Writable).write(`${JSON.stringify({ args, env, cwd })}\n`);
    // As runTool's process timeout: a command still running after it ends the driver (and fails).
    const timer = setTimeout(() => this.child.kill('SIGKILL'), COMMAND_TIMEOUT_MS);
    const a = await answered.finally(() => clearTimeout(timer));
    if (a instanceof Error) throw a;
    const stdout = Buffer.from(a.stdout, 'base64'),
      stderr = Buffer.from(a.stderr, 'base64');
    if (a.code !== 0) throw runFailure(this.tool, args, { code: a.code, stdout, stderr });
    return { stdout: stdout.toString('utf8'), stderr: stderr.toString('utf8') };
  }

  async dispose(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const gone = new Promise((resolve) => this.child.once('exit', resolve));
    (this.child.stdio[3] as Writable).end(); // the driver's loop ends with its input
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
    await gone;
    clearTimeout(timer);
  }
}

/** The interpreter named by the `#!` line of a Python script at `path`; null otherwise. */
function pythonOf(path: string): string | null {
  let head: string;
  try {
    head = readFileSync(path).subarray(0, 200).toString('latin1');
  } catch {
    return null;
  }
  const line = /^#!\s*(\S+)(?:\s+(\S+))?/.exec(head);
  if (!line) return null;
  const [, program, arg] = line;
  if (/python[\d.]*$/.test(program!)) return program!;
  return program!.endsWith('/env') && arg && /^python[\d.]*$/.test(arg) ? arg : null;
}
