/**
 * toS3Error: the one place where errors from below the S3 layer become S3 errors, for app.ts's
 * one onError and the error code of the request log and the access log. An S3Error passes as it
 * is; the engine's QuorumError and ShardReadError (not enough storage answered) and a backend's
 * BackendError of any kind are 503 ServiceUnavailable, SlowDown when a backend throttled;
 * anything else, the coder's CoderError included (it fails only on a bug), is 500 InternalError.
 * It decides an error response's status only: a failure after a response's headers were sent
 * ends that body early (s3/response-body.ts), it never turns into wrong bytes.
 */
import { BackendError } from '../../backends/types.ts';
import { QuorumError, ShardReadError } from '../engine/index.ts';
import { S3Error } from '../model/errors.ts';

export function toS3Error(err: unknown): S3Error {
  if (err instanceof S3Error) return err;
  if (err instanceof QuorumError) {
    return new S3Error('ServiceUnavailable', `Not enough storage backends answered: ${err.message}. Retry later.`);
  }
  if (err instanceof BackendError) {
    return err.kind === 'Throttled'
      ? new S3Error('SlowDown', 'A storage backend asked us to slow down; retry later.')
      : new S3Error('ServiceUnavailable', `A storage backend failed (${err.kind}); retry later.`);
  }
  if (err instanceof ShardReadError) return new S3Error('ServiceUnavailable', 'Not enough storage backends answered; retry later.');
  return new S3Error('InternalError');
}
