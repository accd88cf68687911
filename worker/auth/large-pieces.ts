/**
 * largePieces: a request body re-chunked into pieces of up to 1 MiB. workerd's default reader
 * hands a request body over in ~4 KiB chunks, and every stage downstream (aws-chunked decoding,
 * SHA-256, the store's copy into wasm) pays per chunk: drained that way a body moves at
 * 100-160 MB/s, against ~800 MB/s with BYOB `readAtLeast` reads of 1 MiB. Bodies that are not
 * byte streams (Node's, in tests) are passed through unchanged.
 */

const PIECE_BYTES = 1 << 20;

type ByobReader = ReadableStreamBYOBReader & {
  readAtLeast?(min: number, view: Uint8Array): Promise<ReadableStreamReadResult<Uint8Array>>;
};

export function largePieces(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  let reader: ByobReader;
  try {
    reader = body.getReader({ mode: 'byob' }) as ByobReader;
  } catch {
    return body;
  }
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      // A fresh buffer each time: the piece is handed downstream and must not be reused.
      const view = new Uint8Array(PIECE_BYTES);
      const r: { done: boolean; value?: Uint8Array } = reader.readAtLeast ? await reader.readAtLeast(PIECE_BYTES, view) : await reader.read(view);
      if (r.value && r.value.length > 0) controller.enqueue(r.value);
      if (r.done) controller.close();
    },
    cancel: (reason) => reader.cancel(reason),
  }, { highWaterMark: 0 });
}
