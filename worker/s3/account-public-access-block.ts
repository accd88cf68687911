/**
 * The account-level public access block of S3 Control (GetPublicAccessBlock, PutPublicAccessBlock,
 * DeletePublicAccessBlock at `/v20180820/configuration/publicAccessBlock` with an
 * `x-amz-account-id` header): the gateway has no account-level settings, so the read answers "not
 * configured" (404 NoSuchPublicAccessBlockConfiguration, as S3 Control answers an account without
 * one) and a change is NotImplemented, naming it. Reachable path-style only (the SDKs address S3
 * Control as `<account>.s3-control.<region>...`; with an endpoint override and host prefixes off,
 * `inject_host_prefix=False` in botocore, the request arrives here). The bucket-level block is
 * public-access-block.ts's. A bucket named `v20180820` is unaffected: only requests carrying
 * `x-amz-account-id` are taken.
 * Spec: S3 Control API reference, GetPublicAccessBlock (request syntax and errors).
 */
import { S3Error } from '../model/errors.ts';
import type { S3Address } from './request.ts';

const PATH = { bucket: 'v20180820', key: 'configuration/publicAccessBlock' };

/** Throws S3 Control's answer when the request is one of the three; otherwise returns. */
export function refuseAccountPublicAccessBlock(method: string, addr: S3Address, headers: Headers): void {
  if (addr.bucket !== PATH.bucket || addr.key !== PATH.key || !headers.has('x-amz-account-id')) return;
  if (method === 'GET') throw new S3Error('NoSuchPublicAccessBlockConfiguration', 'The public access block configuration was not found (the gateway has no account-level settings)');
  const op = method === 'PUT' ? 'PutPublicAccessBlock' : method === 'DELETE' ? 'DeletePublicAccessBlock' : `${method} on the account's public access block`;
  throw new S3Error('NotImplemented', `${op} (account level, S3 Control) is not implemented: the gateway has no account-level settings; use the bucket's public access block.`);
}
