/**
 * Reads a stream to its end, copying every chunk as it is read: the gateway's bodies (the gate's
 * verified request body, the engine's object reads) are lent streams whose chunks are valid only
 * until the next read (worker/model/lent-chunks.ts). Consumers that keep chunks (like
 * Response.arrayBuffer()) must copy them; this is the product's own readAll.
 */
import { readAll } from '../../worker/model/lent-chunks.ts';

export function readBytes(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return readAll(stream, 'a test reading a body');
}
