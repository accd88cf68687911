/**
 * The gate's body stream (worker/auth/body-stream.ts) as a slow or silent client meets it: the
 * idle timer answers RequestTimeout (an S3Error, not a client abort), a body that keeps coming
 * is never timed out however long it takes in total, and the raw body stays unlocked until the
 * first read and is unlocked again at its end (so the platform can drain or reuse it).
 */
import { describe, expect, it } from 'vitest';
import { verifyingBody } from '../../worker/auth/body-stream.ts';
import { S3Error } from '../../worker/model/errors.ts';

const pass = (piece: Uint8Array) => [piece.slice()];

/** A body that sends `pieces` pieces of `bytes` each, `gapMs` apart, then (unless `hang`) ends. */
function slowBody(pieces: number, bytes: number, gapMs: number, hang = false): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    async pull(c) {
      if (sent === pieces) {
        if (hang) await new Promise(() => {}); // the client sends nothing more, and keeps the socket
        c.close();
        return;
      }
      await new Promise((r) => setTimeout(r, gapMs));
      sent++;
      c.enqueue(new Uint8Array(bytes).fill(sent));
    },
  });
}

async function drain(s: ReadableStream<Uint8Array>): Promise<number> {
  let n = 0;
  for await (const c of s as unknown as AsyncIterable<Uint8Array>) n += c.length;
  return n;
}

describe('verifyingBody: idle clients', () => {
  it('a body that sends nothing for idleMs fails with RequestTimeout', async () => {
    const started = Date.now();
    const err = await drain(verifyingBody(slowBody(0, 0, 0, true), pass, () => {}, 80)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(S3Error);
    expect((err as S3Error).code).toBe('RequestTimeout');
    expect(Date.now() - started).toBeGreaterThanOrEqual(70);
  });

  it('part of a body, then silence: RequestTimeout after the last piece, not after the first', async () => {
    const err = await drain(verifyingBody(slowBody(3, 1000, 10, true), pass, () => {}, 80)).catch((e: unknown) => e);
    expect((err as S3Error).code).toBe('RequestTimeout');
  });

  it('a body whose pieces come within idleMs of each other is read whole, however long it takes', async () => {
    // 15 pieces 20 ms apart: 300 ms in all, more than the idle time; no gap comes near it.
    expect(await drain(verifyingBody(slowBody(15, 1000, 20), pass, () => {}, 200))).toBe(15_000);
  });

  it('the raw body is locked only from the first read and released at its end', async () => {
    const raw = slowBody(2, 10, 1);
    const body = verifyingBody(raw, pass, () => {}, 1000);
    expect(raw.locked).toBe(false); // nobody read it yet: the platform may drain it
    expect(await drain(body)).toBe(20);
    expect(raw.locked).toBe(false);
  });

  it('a failed check cancels the rest of the raw body', async () => {
    let cancelled = false;
    const raw = new ReadableStream<Uint8Array>({
      pull: (c) => c.enqueue(new Uint8Array(10)),
      cancel: () => {
        cancelled = true;
      },
    });
    const err = await drain(
      verifyingBody(
        raw,
        () => {
          throw new S3Error('BadDigest');
        },
        () => {},
        1000,
      ),
    ).catch((e: unknown) => e);
    expect((err as S3Error).code).toBe('BadDigest');
    expect(cancelled).toBe(true);
  });
});

describe('verifyingBody: the read buffer', () => {
  /** A byte stream (BYOB-readable, as workerd's request bodies) of `bytes` bytes in one piece. */
  const byteBody = (bytes: number) =>
    new ReadableStream({
      type: 'bytes',
      start(c) {
        c.enqueue(new Uint8Array(bytes).map((_, i) => i % 251));
        c.close();
      },
    }) as ReadableStream<Uint8Array>;

  /** The sizes of the buffers the pieces handed on are views of, and the bytes in all. */
  async function buffersOf(body: ReadableStream<Uint8Array>, declared: number | null): Promise<{ buffers: number[]; bytes: number }> {
    const buffers: number[] = [];
    let bytes = 0;
    const keep = (piece: Uint8Array) => {
      buffers.push(piece.buffer.byteLength);
      bytes += piece.length;
      return [piece.slice()];
    };
    await drain(verifyingBody(body, keep, () => {}, 1000, undefined, declared));
    return { buffers, bytes };
  }

  it('a body with a declared length below 1 MiB is read into a buffer of its size (a 64 KiB PUT allocated and dropped 1 MiB)', async () => {
    expect(await buffersOf(byteBody(65_536), 65_536)).toEqual({ buffers: [65_536], bytes: 65_536 });
    expect(await buffersOf(byteBody(10), 10)).toEqual({ buffers: [4096], bytes: 10 });
  });

  it('a body of unknown or large declared length is read through a 1 MiB buffer, whatever its size', async () => {
    expect((await buffersOf(byteBody(65_536), null)).buffers).toEqual([1 << 20]);
    const read = await buffersOf(byteBody(3 << 20), 3 << 20);
    expect(read.bytes).toBe(3 << 20);
    expect(new Set(read.buffers)).toEqual(new Set([1 << 20]));
  });
});
