/**
 * Before an error response: read and discard what is left of a request body nobody read, up to a
 * bound, as HTTP servers do (Go drains 256 KB, nginx lingers) so the connection stays usable.
 * Bigger or endless bodies are left alone: the response goes out at once and the runtime drops
 * the rest. Needed in practice under wrangler dev, whose proxy wedges when a worker answers
 * before it has finished forwarding the request body (GETs then hang, POSTs get 503).
 * The app drains the gate's decoded body (which pulls the raw one through the decoder) or, when
 * the gate itself refused the request, the raw body if nothing holds it.
 * Known gap: a body still held by a reader (a store that failed mid-read without releasing it)
 * is not drained.
 */
export async function drainRequestBody(body: ReadableStream<Uint8Array> | null, declaredLength: number | null, maxBytes: number): Promise<void> {
  if (!body || body.locked || maxBytes <= 0) return;
  if (declaredLength !== null && declaredLength > maxBytes) return;
  const reader = body.getReader();
  let seen = 0;
  try {
    while (seen <= maxBytes) {
      const next = await reader.read();
      if (next.done) return;
      seen += next.value.byteLength;
    }
  } catch {
    // the client went away: nothing left to drain
  } finally {
    reader.releaseLock();
  }
}
