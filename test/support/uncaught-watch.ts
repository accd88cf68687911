/**
 * Watches what the gateway under test prints for lines saying an exception or a rejection went
 * unhandled, so a test can assert that none did (issue 15: no unhandled rejection on any path).
 * wrangler prints an isolate's uncaught errors ("✘ [ERROR] Uncaught Error: ...") only from the
 * DevTools link: the Worker must be started with `inspector: true`, or this sees nothing (checked
 * by hand with a Worker whose upload body errors: seen with the inspector, not without).
 */
export interface UncaughtWatch {
  /** The offending lines so far (each cut to 300 characters). */
  readonly lines: string[];
  stop(): void;
}

export function watchUncaught(): UncaughtWatch {
  const lines: string[] = [];
  const check = (text: string) => {
    for (const line of text.split('\n')) if (/uncaught|unhandled/i.test(line)) lines.push(line.slice(0, 300));
  };
  const originalWrite = process.stderr.write.bind(process.stderr);
  const originalError = console.error;
  process.stderr.write = ((chunk: unknown, ...rest: unknown[]) => {
    check(String(chunk));
    return (originalWrite as (...a: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof process.stderr.write;
  console.error = (...args: unknown[]) => {
    check(args.map(String).join(' '));
    originalError(...args);
  };
  return {
    lines,
    stop() {
      process.stderr.write = originalWrite;
      console.error = originalError;
    },
  };
}
