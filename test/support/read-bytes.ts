/**
 * Reads a stream to its end, copying every chunk: the gateway's bodies (the gate's verified
 * request body, the engine's object reads) reuse their buffers, so a chunk is valid only until
 * the next read. Consumers that keep chunks (like Response.arrayBuffer()) must copy them.
 */
export async function readBytes(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let total = 0;
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parts.push(value.slice());
    total += value.length;
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
