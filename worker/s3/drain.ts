/**
 * Before an error response: read and discard what is left of a request body nobody read, up to a
 * bound, as HTTP servers do (Go drains 256 KB, nginx lingers) so the client, still sending,
 * reads its error instead of a reset. Never waits on a stalled client (issue 21): a body that
 * sends nothing for `idleMs` is given up. Whatever is not drained (a stall, a body declared or
 * found bigger than `maxBytes`) is cancelled, which tells the runtime the body will never be
 * read: workerd holds an answer back until the request body has been read or cancelled, so
 * without this a stalled upload would never get its refusal.
 * Known gap: a body still held by a reader (a store that failed mid-read without releasing it)
 * is neither drained nor cancelled here.
 */
export const DRAIN_IDLE_MS = 1_000;

export async function drainRequestBody(
  body: ReadableStream<Uint8Array> | null,
  declaredLength: number | null,
  maxBytes: number,
  idleMs = DRAIN_IDLE_MS,
): Promise<void> {
  if (!body || body.locked) return;
  const reader = body.getReader();
  let seen = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const idle = () =>
    new Promise<'idle'>((resolve) => {
      timer = setTimeout(() => resolve('idle'), idleMs);
    });
  try {
    if (maxBytes > 0 && (declaredLength === null || declaredLength <= maxBytes)) {
      while (seen <= maxBytes) {
        const next = await Promise.race([reader.read(), idle()]);
        clearTimeout(timer);
        if (next === 'idle') break;
        if (next.done) return;
        seen += next.value.byteLength;
      }
    }
    await reader.cancel().catch(() => {});
  } catch {
    // the client went away: nothing left to drain
  } finally {
    clearTimeout(timer);
    reader.releaseLock();
  }
}
