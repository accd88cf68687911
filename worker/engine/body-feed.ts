/**
 * BodyFeed: a request body read in order into the writer's buffers, every byte hashed once on
 * the way (BodyDigest: MD5 for the ETag, the client's checksum). Writers ask for "the next n
 * bytes, here" (`fill`), so a body of any size is copied straight from the read pieces into wasm
 * stripe memory, and one body can feed several units (a segmented write) without re-chunking.
 */
import { BodyDigest } from '../model/digest.ts';
import { assertLive } from '../model/lent-chunks.ts';
import { S3Error } from '../model/errors.ts';
import type { ChecksumRequest } from '../model/object-store.ts';
import { BodyReader } from './body-reader.ts';

/** What a unit writer reads its bytes from: the body itself, or the body sealed (sealing-feed.ts). */
export interface UnitFeed {
  readonly digest: BodyDigest;
  fill(len: number, target: () => Uint8Array, at?: number): Promise<void>;
  expectEnd(): Promise<void>;
  release(): void;
}

export class BodyFeed implements UnitFeed {
  readonly digest: BodyDigest;
  private readonly reader: BodyReader;
  /** Unread rest of the last body piece. */
  private pending: Uint8Array | null = null;

  constructor(
    body: ReadableStream<Uint8Array>,
    checksum: ChecksumRequest | null,
    /** The declared size: for the messages of IncompleteBody. */
    private readonly size: number,
  ) {
    this.reader = new BodyReader(body);
    this.digest = new BodyDigest(checksum);
  }

  /** Bytes taken from the body so far. */
  get received(): number {
    return this.digest.size - (this.pending?.length ?? 0);
  }

  /**
   * Copies the next `len` bytes of the body to `target()` at offset `at`; `target` is called
   * for every piece (a fresh view: wasm memory may have moved meanwhile). IncompleteBody when the
   * body ends first.
   */
  async fill(len: number, target: () => Uint8Array, at = 0): Promise<void> {
    let filled = 0;
    while (filled < len) {
      if (!this.pending || this.pending.length === 0) {
        this.pending = await this.reader.next();
        if (!this.pending) throw new S3Error('IncompleteBody', `the body ended after ${this.digest.size} of ${this.size} bytes`);
        assertLive(this.pending, 'the body feed');
        this.digest.update(this.pending);
      }
      const take = Math.min(len - filled, this.pending.length);
      target().set(this.pending.subarray(0, take), at + filled);
      this.pending = this.pending.subarray(take);
      filled += take;
    }
  }

  /** IncompleteBody when the body goes on past its declared size. */
  async expectEnd(): Promise<void> {
    if ((this.pending && this.pending.length > 0) || !(await this.reader.atEnd())) {
      throw new S3Error('IncompleteBody', `the body is longer than its declared ${this.size} bytes`);
    }
  }

  /** Gives the body back unread (the app drains what is left before it answers). */
  release(): void {
    this.reader.release();
  }
}
