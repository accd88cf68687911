/**
 * The message of anything thrown, for a log line or an error's text: an Error's message, else the
 * thrown value as a string. The one spelling of what was written as
 * `String((err as Error)?.message ?? err)` in every room (issue 46). backends/ keeps its own (a
 * clean leaf imports nothing of the project).
 */
export function errorMessage(err: unknown): string {
  return String((err as Error | null | undefined)?.message ?? err);
}
