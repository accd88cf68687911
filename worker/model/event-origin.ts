/**
 * Who made a change and how, carried with the request across awaits (AsyncLocalStorage, as
 * request-notes.ts carries what the access log needs) to the catalog client, which sends it with
 * the calls that commit a change (catalog/operations.ts `wire`): the catalog writes the change's
 * event in the same transaction (catalog/sql-outbox.ts) and needs the S3 operation (Put, Post,
 * Copy, CompleteMultipartUpload, tagging, a lifecycle expiration), the signer's access key id
 * (userIdentity.principalId) and the client's address (requestParameters.sourceIPAddress).
 * A change made outside any origin (upkeep rebuilding an object) is announced as a Put by the
 * gateway itself: an event too many is better than one lost.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

export interface EventOrigin {
  /** The S3 operation (s3/operations.ts), or 'LifecycleExpiration' for the lifecycle job. */
  op: string;
  /** The access key id; 'anonymous'; 's3.amazonaws.com'-like for the gateway's own jobs. */
  principal: string;
  sourceIp: string;
  requestId: string;
}

const current = new AsyncLocalStorage<EventOrigin>();

/** Runs `fn` with `origin` as the origin of the changes it makes. */
export function withEventOrigin<T>(origin: EventOrigin, fn: () => T): T {
  return current.run(origin, fn);
}

/** The origin of the change being made now, if any. */
export function eventOrigin(): EventOrigin | undefined {
  return current.getStore();
}

/** The principal AWS names for its own lifecycle expirations. */
export const LIFECYCLE_PRINCIPAL = 's3.amazonaws.com';
