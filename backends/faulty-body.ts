// Body-stream faults for FaultyBackend: cut a read short, or flip bits in it. Both copy a chunk
// before changing it, so the wrapped backend's stored bytes are never touched.

export type TruncateMode = 'end' | 'error';

/** Passes the first `keepBytes` bytes, then ends the stream ('end': a silent short read) or
 *  errors it with `error()` ('error': a connection lost mid-body). The source is cancelled. */
export function truncateBody(body: ReadableStream<Uint8Array>, keepBytes: number, mode: TruncateMode, error: () => unknown): ReadableStream<Uint8Array> {
  let passedBytes = 0;
  const cut = (ctl: TransformStreamDefaultController<Uint8Array>) => {
    if (mode === 'end') ctl.terminate();
    else ctl.error(error());
  };
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      start(ctl) {
        if (keepBytes === 0 && mode === 'end') ctl.terminate();
      },
      transform(chunk, ctl) {
        const roomBytes = keepBytes - passedBytes;
        if (chunk.byteLength < roomBytes || (chunk.byteLength === roomBytes && mode === 'end')) {
          passedBytes += chunk.byteLength;
          ctl.enqueue(chunk);
          if (passedBytes === keepBytes) cut(ctl);
          return;
        }
        if (roomBytes > 0) ctl.enqueue(chunk.slice(0, roomBytes));
        passedBytes = keepBytes;
        cut(ctl);
      },
    }),
  );
}

/** XORs `masks.get(offset)` into the byte at each offset (counted from the start of the body). */
export function corruptBody(body: ReadableStream<Uint8Array>, masks: Map<number, number>): ReadableStream<Uint8Array> {
  let chunkStart = 0;
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, ctl) {
        const chunkEnd = chunkStart + chunk.byteLength;
        let out = chunk;
        for (const [offset, mask] of masks) {
          if (offset < chunkStart || offset >= chunkEnd) continue;
          if (out === chunk) out = chunk.slice();
          out[offset - chunkStart] ^= mask;
        }
        chunkStart = chunkEnd;
        ctl.enqueue(out);
      },
    }),
  );
}
