/**
 * The account-level public access block of S3 Control (GetPublicAccessBlock, PutPublicAccessBlock,
 * DeletePublicAccessBlock at `/v20180820/configuration/publicAccessBlock` with an
 * `x-amz-account-id` header): the gateway has no account-level settings, so the read answers "not
 * configured" (404 NoSuchPublicAccessBlockConfiguration, as S3 Control answers an account without
 * one) and a change is NotImplemented, naming it. Two addresses: path-style
 * `/v20180820/configuration/...`, and the one the SDKs make from an endpoint override,
 * `<account>.<endpoint host>/v20180820/configuration/...`, which reaches a gateway with a base
 * domain (wildcard DNS, as for virtual-hosted buckets) as bucket `<account>`. Only requests whose
 * `x-amz-account-id` header is there (and names that account, virtual-hosted) are taken, so no
 * bucket's objects are shadowed. The bucket-level block is public-access-block.ts's.
 * Spec: S3 Control API reference, GetPublicAccessBlock (request syntax and errors).
 */
import { S3Error } from '../model/errors.ts';
import type { S3Address } from './request.ts';

const PATH = 'v20180820/configuration/publicAccessBlock';

/** Throws S3 Control's answer when the request is one of the three; otherwise returns. */
export function refuseAccountPublicAccessBlock(method: string, addr: S3Address, headers: Headers): void {
  const account = headers.get('x-amz-account-id');
  if (account === null || addr.bucket === null) return;
  const pathStyle = `${addr.bucket}/${addr.key}` === PATH;
  const hosted = addr.bucket === account && addr.key === PATH;
  if (!pathStyle && !hosted) return;
  if (method === 'GET')
    throw new S3Error(
      'NoSuchPublicAccessBlockConfiguration',
      'The public access block configuration was not found (the gateway has no account-level settings)',
    );
  const op = method === 'PUT' ? 'PutPublicAccessBlock' : method === 'DELETE' ? 'DeletePublicAccessBlock' : `${method} on the account's public access block`;
  throw new S3Error(
    'NotImplemented',
    `${op} (account level, S3 Control) is not implemented: the gateway has no account-level settings; use the bucket's public access block.`,
  );
}
