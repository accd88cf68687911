/**
 * Before an error response to a request whose body a handler had started on: read and discard
 * what is left, up to a bound, as HTTP servers do (Go drains 256 KB, nginx lingers) so the client
 * reads its error instead of a reset. Never waits on a stalled client (issue 21): a body that
 * sends nothing for `idleMs` is cancelled and the answer goes out; bigger or endless bodies are
 * left alone and the runtime drops the rest. A request refused before any handler read its body
 * (the gate, the scope check) is not drained at all: it is answered at once (app.ts).
 * Known gap: a body still held by a reader (a store that failed mid-read without releasing it)
 * is not drained.
 */
export const DRAIN_IDLE_MS = 1_000;

export async function drainRequestBody(body: ReadableStream<Uint8Array> | null, declaredLength: number | null, maxBytes: number, idleMs = DRAIN_IDLE_MS): Promise<void> {
  if (!body || body.locked || maxBytes <= 0) return;
  if (declaredLength !== null && declaredLength > maxBytes) return;
  const reader = body.getReader();
  let seen = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const idle = () => new Promise<'idle'>((resolve) => {
    timer = setTimeout(() => resolve('idle'), idleMs);
  });
  try {
    while (seen <= maxBytes) {
      const next = await Promise.race([reader.read(), idle()]);
      clearTimeout(timer);
      if (next === 'idle') {
        await reader.cancel().catch(() => {});
        return;
      }
      if (next.done) return;
      seen += next.value.byteLength;
    }
  } catch {
    // the client went away: nothing left to drain
  } finally {
    clearTimeout(timer);
    reader.releaseLock();
  }
}
