/**
 * BodyReader: pulls a request body in large pieces. workerd's default reader yields ~4 KiB
 * chunks (100-160 MB/s drained that way); a BYOB reader with `readAtLeast` into a 1 MiB buffer
 * drains ~800 MB/s. Bodies that are not byte streams (the output of a TransformStream, such as
 * the aws-chunked decoder) fall back to the default reader.
 */

const PIECE_BYTES = 1 << 20;

type ByobReader = ReadableStreamBYOBReader & {
  readAtLeast?(min: number, view: Uint8Array): Promise<ReadableStreamReadResult<Uint8Array>>;
};

export class BodyReader {
  private byob: ByobReader | null = null;
  private plain: ReadableStreamDefaultReader<Uint8Array> | null = null;
  private buffer: ArrayBuffer | null = null;

  constructor(stream: ReadableStream<Uint8Array>) {
    try {
      this.byob = stream.getReader({ mode: 'byob' }) as ByobReader;
      this.buffer = new ArrayBuffer(PIECE_BYTES);
    } catch {
      this.plain = stream.getReader();
    }
  }

  /** The next piece, or null at the end. A piece is valid until the next call. */
  async next(): Promise<Uint8Array | null> {
    if (this.plain) {
      const r = await this.plain.read();
      return r.done ? null : r.value;
    }
    const reader = this.byob!;
    const view = new Uint8Array(this.buffer!);
    const r: { done: boolean; value?: Uint8Array } = reader.readAtLeast ? await reader.readAtLeast(PIECE_BYTES, view) : await reader.read(view);
    if (r.value) this.buffer = r.value.buffer as ArrayBuffer;
    if (!r.value || r.value.length === 0) return r.done ? null : new Uint8Array(0);
    return r.value;
  }

  /** True when the body has no more bytes (empty pieces are skipped). */
  async atEnd(): Promise<boolean> {
    for (;;) {
      const piece = await this.next();
      if (piece === null) return true;
      if (piece.length > 0) return false;
    }
  }

  /** Gives the body back unread (someone else may drain it). */
  release(): void {
    try {
      (this.plain ?? this.byob)?.releaseLock();
    } catch {
      // a read is still pending: leave the lock
    }
  }

  async cancel(reason?: unknown): Promise<void> {
    await (this.plain ?? this.byob)?.cancel(reason).catch(() => {});
  }
}
