/**
 * Running the real command-line S3 clients (awscli, rclone, s3cmd) that `.ci/run` installs from
 * Debian. test/support/prerequisites.ts finds them (Debian's /usr/bin ahead of anything earlier
 * on PATH, a pip awscli 1.x say, so CI and a developer machine run the same client); a test that
 * runs one declares it with needs(), which skips it, saying why, where the client is missing.
 *
 * Every client runs with a clean environment: PATH, a temporary HOME and only the variables the
 * test sets, never the caller's. An inherited AWS_CA_BUNDLE, AWS_PROFILE, proxy variable or
 * ~/.aws, ~/.s3cfg, ~/.config/rclone would otherwise change what the client does (on the machine
 * these tests were written on, AWS_CA_BUNDLE alone made rclone fail before sending a request).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { toolPath, type ToolId } from '../support/prerequisites.ts';

const execFileAsync = promisify(execFile);

export interface CliTool {
  /** Absolute path of the binary that runs. */
  path: string;
  /** First line of its version output, for failure messages. */
  version: string;
}

/** The client `id` (which the test needs()) and its version. */
export async function requireTool(id: ToolId, versionArgs: string[], env: NodeJS.ProcessEnv): Promise<CliTool> {
  const path = toolPath(id);
  const { stdout, stderr } = await execFileAsync(path, versionArgs, { env, timeout: 60_000 });
  return { path, version: (stdout || stderr).split('\n')[0].trim() };
}

/** The environment every client gets: nothing inherited but PATH. */
export function cleanEnv(home: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, LANG: 'C.UTF-8', TZ: 'UTC', ...extra };
}

export interface RunResult {
  stdout: string;
  stderr: string;
}

/** Runs a client to completion; a non-zero exit throws with the command line and its output. */
export async function runTool(tool: CliTool, args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<RunResult> {
  const { stdout, stderr } = await run(tool, args, env, cwd);
  return { stdout: stdout.toString('utf8'), stderr: stderr.toString('utf8') };
}

/** As runTool, for a command whose stdout is binary data (`rclone cat`). */
export async function runToolForBytes(tool: CliTool, args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<Buffer> {
  return (await run(tool, args, env, cwd)).stdout;
}

async function run(tool: CliTool, args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<{ stdout: Buffer; stderr: Buffer }> {
  try {
    return await execFileAsync(tool.path, args, { env, cwd, timeout: 300_000, maxBuffer: 128 * 1024 * 1024, encoding: 'buffer' });
  } catch (err) {
    throw runFailure(tool, args, err as RunFailure);
  }
}

/** How a client run ended when it failed. */
export interface RunFailure {
  code?: number | string;
  signal?: string;
  stdout?: Buffer;
  stderr?: Buffer;
}

/** The error a failed run throws: the command line, how it ended, and its output. */
export function runFailure(tool: CliTool, args: string[], e: RunFailure): Error {
  return new Error(
    `${tool.version}: \`${[tool.path, ...args].join(' ')}\` failed (exit ${e.code ?? '?'}${e.signal ? `, signal ${e.signal}` : ''})\n` +
      `--- stderr ---\n${clip(e.stderr?.toString('utf8') ?? '')}\n--- stdout ---\n${clip(e.stdout?.toString('utf8') ?? '')}`,
  );
}

/** Keeps the head and tail of long client output (rclone hex-dumps whole response bodies). */
function clip(text: string, head = 3000, tail = 1500): string {
  return text.length <= head + tail ? text : `${text.slice(0, head)}\n[... ${text.length - head - tail} chars ...]\n${text.slice(-tail)}`;
}
