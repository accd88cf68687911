/**
 * The request body as the gate reads it: the platform's stream, with its failure named. When the
 * client goes away mid-upload the platform errors the stream (workerd: "Network connection
 * lost."); handed on as is, that becomes an InternalError logged as a bug. Here any error of the
 * raw body becomes `clientAborted` (model/errors.ts): IncompleteBody to the client, a client abort
 * in the log. Errors of the gate's own verifiers come later in the chain and are not touched.
 */

import { clientAborted, S3Error } from '../model/errors.ts';

export function clientBody(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let next: ReadableStreamReadResult<Uint8Array>;
        try {
          next = await reader.read();
        } catch (err) {
          return controller.error(err instanceof S3Error ? err : clientAborted(err));
        }
        if (next.done) controller.close();
        else controller.enqueue(next.value);
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
}
