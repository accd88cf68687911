/**
 * toS3Error: the one place where errors from below the S3 layer become S3 errors. Backends throw
 * BackendError, the coder CoderError, the engine QuorumError and ShardReadError; a client sees
 * 503 ServiceUnavailable (or SlowDown when a backend throttles) for anything that a retry may
 * fix, and 500 InternalError for bugs. Never wrong data, never a bare 200.
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
