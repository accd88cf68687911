/**
 * One stream read by two consumers at the pace of the slower: the client's response and the
 * adoption's write (adopt-on-read). ReadableStream.tee() would queue, without bound, every chunk
 * the faster side has read and the slower has not: a slow client would make the adoption buffer
 * the object. Here a chunk is read from the source only when every live branch has asked for
 * one, so at most one chunk is held per branch. A branch cancelled (the client gone, the
 * adoption refused) leaves the other reading alone; the source is cancelled when both are.
 * The adoption's branch gets its own copy of each chunk: the client's response may still hold
 * the chunk it was given when the write path is done with it, and neither may see the other's use.
 */
export function pairedStreams(
  source: ReadableStream<Uint8Array>,
): [client: ReadableStream<Uint8Array>, adoption: ReadableStream<Uint8Array>, dropAdoption: (reason: unknown) => Promise<void>] {
  const reader = source.getReader();
  const controllers: (ReadableStreamDefaultController<Uint8Array> | null)[] = [null, null];
  const live = [true, true];
  const wanting = [false, false];
  let waiters: (() => void)[] = [];
  let reading = false;
  let ended = false;

  const step = async (): Promise<void> => {
    reading = true;
    wanting[0] = wanting[1] = false;
    const woken = waiters;
    waiters = [];
    try {
      const { done, value } = await reader.read();
      if (done) {
        ended = true;
        for (let i = 0; i < 2; i++) if (live[i]) controllers[i]!.close();
      } else {
        if (live[0]) controllers[0]!.enqueue(value);
        if (live[1]) controllers[1]!.enqueue(live[0] ? value.slice() : value);
      }
    } catch (err) {
      ended = true;
      for (let i = 0; i < 2; i++) if (live[i]) controllers[i]!.error(err);
    } finally {
      reading = false;
      for (const wake of woken) wake();
    }
  };

  /** Reads the next chunk once every live branch wants one (or answers when a read is under way). */
  const demand = (i: number): Promise<void> => {
    if (ended) return Promise.resolve();
    wanting[i] = true;
    const ready = [0, 1].every((j) => !live[j] || wanting[j]);
    const wait = new Promise<void>((resolve) => waiters.push(resolve));
    if (ready && !reading) void step();
    return wait;
  };

  const branch = (i: number) =>
    new ReadableStream<Uint8Array>(
      {
        start(controller) {
          controllers[i] = controller;
        },
        pull: () => demand(i),
        cancel: (reason) => leave(i, reason),
      },
      { highWaterMark: 0 },
    );

  /** Branch `i` reads no more (cancelled by its reader, or dropped while a reader still holds it). */
  const leave = async (i: number, reason: unknown): Promise<void> => {
    if (!live[i]) return;
    live[i] = false;
    wanting[i] = false;
    if (!live[0] && !live[1]) {
      ended = true;
      await reader.cancel(reason).catch(() => {});
      for (const wake of waiters.splice(0)) wake();
      return;
    }
    // The other branch may be waiting on this one's demand.
    const other = 1 - i;
    if (wanting[other] && !reading && !ended) void step();
  };
  const client = branch(0);
  const adoption = branch(1);
  /** The adoption is given up (its write refused, perhaps before it read a byte): the client reads on alone. */
  const dropAdoption = async (reason: unknown) => {
    if (!live[1]) return;
    const controller = controllers[1]!;
    await leave(1, reason);
    try {
      controller.error(reason);
    } catch {
      // already closed or errored
    }
  };
  return [client, adoption, dropAdoption];
}
