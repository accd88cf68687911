/**
 * pairedStreams (worker/adopt/paired-streams.ts): the client's branch and the adoption's read one
 * source at the pace of the slower, so neither makes the other buffer the object; a branch gone
 * leaves the other reading to the end; both gone cancel the source.
 */
import { describe, expect, it } from 'vitest';
import { pairedStreams } from '../../worker/adopt/paired-streams.ts';

/** A source of `n` chunks of 1 KiB (chunk i filled with i), counting the chunks pulled from it. */
function counted(n: number) {
  const state = { pulled: 0, cancelled: false };
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (state.pulled === n) return controller.close();
        controller.enqueue(new Uint8Array(1024).fill(state.pulled++ % 256));
      },
      cancel() {
        state.cancelled = true;
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, state };
}

async function drain(stream: ReadableStream<Uint8Array>): Promise<number[]> {
  const firsts: number[] = [];
  for await (const chunk of stream) firsts.push(chunk[0]!);
  return firsts;
}

describe('pairedStreams', () => {
  it('a client that reads nothing holds the adoption back: the source is read at most one chunk ahead', async () => {
    const { stream, state } = counted(100);
    const [client, adoption] = pairedStreams(stream);
    const reader = adoption.getReader();
    const first = reader.read();
    // The adoption asks; the client has not: nothing is read until both want a chunk.
    await new Promise((r) => setTimeout(r, 0));
    expect(state.pulled).toBe(0);
    const clientReader = client.getReader();
    await clientReader.read();
    expect((await first).value![0]).toBe(0);
    // The adoption keeps asking while the client is idle: one more read is pending, not served.
    const second = reader.read();
    await new Promise((r) => setTimeout(r, 0));
    expect(state.pulled).toBeLessThanOrEqual(2);
    await clientReader.read();
    expect((await second).value![0]).toBe(1);
  });

  it('both branches get every chunk in order; the adoption its own copy', async () => {
    const { stream } = counted(50);
    const [client, adoption] = pairedStreams(stream);
    const [a, b] = await Promise.all([drain(client), drain(adoption)]);
    expect(a).toEqual(Array.from({ length: 50 }, (_, i) => i));
    expect(b).toEqual(a);
  });

  it('the client gone, the adoption reads on to the end; both gone, the source is cancelled', async () => {
    const { stream, state } = counted(30);
    const [client, adoption] = pairedStreams(stream);
    const clientReader = client.getReader();
    const done = drain(adoption);
    await clientReader.read();
    await clientReader.cancel('client went away');
    expect((await done).length).toBe(30);
    expect(state.cancelled).toBe(false);

    const second = counted(30);
    const [c2, a2] = pairedStreams(second.stream);
    await c2.cancel('gone');
    await a2.cancel('refused');
    expect(second.state.cancelled).toBe(true);
  });

  it('a source that fails fails both branches', async () => {
    const failing = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.error(new Error('source reset'));
      },
    });
    const [client, adoption] = pairedStreams(failing);
    const [a, b] = await Promise.allSettled([drain(client), drain(adoption)]);
    expect(a.status === 'rejected' && String(a.reason)).toContain('source reset');
    expect(b.status === 'rejected' && String(b.reason)).toContain('source reset');
  });

  it('an adoption dropped before it read a byte (its write refused) leaves the client reading alone', async () => {
    const { stream } = counted(20);
    const [client, adoption, dropAdoption] = pairedStreams(stream);
    const held = adoption.getReader(); // the write path holds its body and never reads it
    const clientDone = drain(client);
    await new Promise((r) => setTimeout(r, 0));
    await dropAdoption(new Error('refused'));
    expect((await clientDone).length).toBe(20);
    await expect(held.read()).rejects.toThrow('refused');
  });
});
