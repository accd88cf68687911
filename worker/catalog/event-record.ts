/**
 * The payload of one event as AWS sends it (docs/NOTIFICATIONS.md "Payload"): `{ "Records": [ one
 * record ] }` with eventVersion 2.1, so code written for AWS, MinIO or Argo Events reads it
 * unchanged; and the s3:TestEvent AWS sends when a configuration is put.
 * Spec: S3 "Event message structure" (User Guide, notification-content-structure).
 */
import type { EventName } from '../model/notification.ts';
import type { EventOrigin } from '../model/event-origin.ts';

/** What the committing transaction knows of the change. */
export interface ChangeFacts {
  event: EventName;
  key: string;
  size?: number;
  etag?: string;
  versionId?: string;
}

export interface RecordContext {
  bucket: string;
  region: string;
  sequencer: string;
  configurationId: string;
  /** ms since the epoch: the commit's instant. */
  time: number;
  origin: EventOrigin | undefined;
}

/** Bucket owner and principal of changes made by the gateway itself (no origin). */
const GATEWAY_PRINCIPAL = 'shardgate';

/**
 * The key as AWS writes it in events: URL-encoded as an HTML form is (a space is `+`), `/` kept.
 * Decoding with `decodeURIComponent(key.replace(/\+/g, ' '))`, AWS's documented recipe, gives the key back.
 */
export function eventKey(key: string): string {
  return encodeURIComponent(key).replace(/%20/g, '+').replace(/%2F/g, '/');
}

/** The AWS event record of one change for one rule. */
export function s3EventRecord(change: ChangeFacts, c: RecordContext): Record<string, unknown> {
  const created = change.event.startsWith('s3:ObjectCreated:') || change.event.startsWith('s3:ObjectTagging:');
  const object: Record<string, unknown> = { key: eventKey(change.key) };
  if (created && change.size !== undefined) object.size = change.size;
  if (created && change.etag !== undefined) object.eTag = change.etag.replace(/^"|"$/g, '');
  if (change.versionId !== undefined) object.versionId = change.versionId;
  object.sequencer = c.sequencer;
  return {
    eventVersion: '2.1',
    eventSource: 'aws:s3',
    awsRegion: c.region,
    eventTime: new Date(c.time).toISOString(),
    eventName: change.event.slice('s3:'.length),
    userIdentity: { principalId: c.origin?.principal ?? GATEWAY_PRINCIPAL },
    requestParameters: { sourceIPAddress: c.origin?.sourceIp ?? '' },
    responseElements: { 'x-amz-request-id': c.origin?.requestId ?? '', 'x-amz-id-2': c.sequencer },
    s3: {
      s3SchemaVersion: '1.0',
      configurationId: c.configurationId,
      bucket: { name: c.bucket, ownerIdentity: { principalId: GATEWAY_PRINCIPAL }, arn: `arn:aws:s3:::${c.bucket}` },
      object,
    },
  };
}

/** The body of one delivery: AWS sends one record per message. */
export function eventBody(record: Record<string, unknown>): string {
  return JSON.stringify({ Records: [record] });
}

/** What AWS sends to each destination of a configuration when it is put. */
export function testEventBody(bucket: string, time: number, requestId: string): string {
  return JSON.stringify({ Service: 'Amazon S3', Event: 's3:TestEvent', Time: new Date(time).toISOString(), Bucket: bucket, RequestId: requestId, HostId: '' });
}
