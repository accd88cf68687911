/**
 * The scope suite's own base requests (issue 21), beside mutation/bases.ts: the operations where a
 * scope is checked on more than the request's own bucket and key. CopyObject and UploadPartCopy
 * with a source inside and outside a prefix, CompleteMultipartUpload inside and outside it,
 * DeleteObjects with an entry outside it, bucket reads. Made by @aws-sdk/client-s3 (header auth),
 * one as a presigned URL and one as SigV2. Each names what it needs (`Need`), the suite's oracle.
 */
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  DeleteObjectsCommand,
  GetBucketLocationCommand,
  HeadBucketCommand,
  PutBucketLoggingCommand,
  PutObjectCommand,
  PutObjectLegalHoldCommand,
  PutObjectRetentionCommand,
  UploadPartCopyCommand,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { S3Client } from '@aws-sdk/client-s3';
import { sigv2Target } from '../helpers/signers.ts';
import { BUCKET, HOST, sdk, type BaseCase, type SignAs } from './bases.ts';
import type { Scheme, Wire } from './wire.ts';

/** What a request needs of a scope: an action on a key, on the whole bucket, on some of it, or a listing under a prefix. */
export type Need =
  | { action: 'read' | 'write' | 'delete' | 'legal-hold' | 'retention'; key: string; bucket?: string }
  | { action: 'write' | 'delete'; wholeBucket: string }
  | { action: 'list' | 'delete'; someOf: string }
  | { action: 'list'; listing: string }
  | 'nothing';

export interface ScopeState {
  uploadId: string;
  /** An upload at dir/mpu with part 1 uploaded. */
  dirUploadId: string;
  dirPartEtag: string;
  mpuPartEtag: string;
}

const header: Scheme = { kind: 'v4-header', body: 'unsigned' };
const headerWhole: Scheme = { kind: 'v4-header', body: 'whole' };
const B = BUCKET;
/** A second bucket of the gateway (scoped-gateway.ts), inside the one-bucket key's pattern. */
export const OWN = 'fz-own';

export function scopeCases(s: ScopeState): Array<BaseCase & { needs: Need[] }> {
  const presignedCopy = async (as: SignAs): Promise<Wire> => {
    const client = new S3Client({
      endpoint: `http://${HOST}`,
      forcePathStyle: true,
      region: as.region ?? 'us-east-1',
      credentials: { accessKeyId: as.accessKeyId!, secretAccessKey: as.secret! },
    });
    const url = new URL(
      await getSignedUrl(client, new CopyObjectCommand({ Bucket: B, Key: 'dir/pcopy', CopySource: `${B}/obj` }), {
        expiresIn: 300,
        signingDate: new Date(Date.now() + (as.skewMs ?? 0)),
      }),
    );
    return {
      method: 'PUT',
      target: url.pathname + url.search,
      headers: [
        ['host', url.host],
        ['content-length', '0'],
      ],
      body: new Uint8Array(0),
    };
  };
  const v2Copy = (as: SignAs): Wire => {
    const headers = { 'x-amz-copy-source': `/${B}/obj` };
    const target = sigv2Target({ method: 'PUT', path: `/${B}/dir/v2copy`, headers, expires: 4102444800, secret: as.secret, accessKeyId: as.accessKeyId });
    return { method: 'PUT', target, headers: [['host', HOST], ...Object.entries(headers), ['content-length', '0']], body: new Uint8Array(0) };
  };
  return [
    {
      name: 'CopyObject, source outside the prefix',
      scheme: header,
      needs: [
        { action: 'write', key: 'dir/copy' },
        { action: 'read', key: 'obj' },
      ],
      sign: (as) => sdk(new CopyObjectCommand({ Bucket: B, Key: 'dir/copy', CopySource: `${B}/obj` }), as),
    },
    {
      name: 'CopyObject, source inside the prefix',
      scheme: header,
      needs: [
        { action: 'write', key: 'dir/copy' },
        { action: 'read', key: 'dir/obj.txt' },
      ],
      sign: (as) => sdk(new CopyObjectCommand({ Bucket: B, Key: 'dir/copy', CopySource: `${B}/dir/obj.txt` }), as),
    },
    {
      name: 'presigned CopyObject, source outside the prefix',
      scheme: { kind: 'v4-query', body: 'unsigned' },
      needs: [
        { action: 'write', key: 'dir/pcopy' },
        { action: 'read', key: 'obj' },
      ],
      sign: presignedCopy,
    },
    {
      name: 'SigV2 CopyObject, source outside the prefix',
      scheme: { kind: 'v2-query', body: 'unsigned' },
      needs: [
        { action: 'write', key: 'dir/v2copy' },
        { action: 'read', key: 'obj' },
      ],
      sign: async (as) => v2Copy(as),
    },
    {
      name: 'UploadPartCopy, source outside the prefix',
      scheme: header,
      needs: [
        { action: 'write', key: 'dir/mpu' },
        { action: 'read', key: 'obj' },
      ],
      sign: (as) => sdk(new UploadPartCopyCommand({ Bucket: B, Key: 'dir/mpu', UploadId: s.dirUploadId, PartNumber: 2, CopySource: `${B}/obj` }), as),
    },
    {
      name: 'UploadPartCopy, source inside the prefix',
      scheme: header,
      needs: [
        { action: 'write', key: 'dir/mpu' },
        { action: 'read', key: 'dir/obj.txt' },
      ],
      sign: (as) => sdk(new UploadPartCopyCommand({ Bucket: B, Key: 'dir/mpu', UploadId: s.dirUploadId, PartNumber: 2, CopySource: `${B}/dir/obj.txt` }), as),
    },
    {
      name: 'CompleteMultipartUpload inside the prefix',
      scheme: headerWhole,
      needs: [{ action: 'write', key: 'dir/mpu' }],
      sign: (as) =>
        sdk(
          new CompleteMultipartUploadCommand({
            Bucket: B,
            Key: 'dir/mpu',
            UploadId: s.dirUploadId,
            MultipartUpload: { Parts: [{ PartNumber: 1, ETag: s.dirPartEtag }] },
          }),
          as,
        ),
    },
    {
      name: 'CompleteMultipartUpload outside the prefix',
      scheme: headerWhole,
      needs: [{ action: 'write', key: 'mpu' }],
      sign: (as) =>
        sdk(
          new CompleteMultipartUploadCommand({
            Bucket: B,
            Key: 'mpu',
            UploadId: s.uploadId,
            MultipartUpload: { Parts: [{ PartNumber: 1, ETag: s.mpuPartEtag }] },
          }),
          as,
        ),
    },
    {
      name: 'DeleteObjects, one entry inside and one outside the prefix',
      scheme: headerWhole,
      needs: [{ action: 'delete', someOf: B }],
      sign: (as) => sdk(new DeleteObjectsCommand({ Bucket: B, Delete: { Objects: [{ Key: 'dir/obj.txt' }, { Key: 'obj' }] } }), as),
    },
    // PutBucketLogging's target is a write into it (issue 37): fz-own is the one-bucket key's own bucket.
    {
      name: 'PutBucketLogging, target another bucket',
      scheme: headerWhole,
      needs: [
        { action: 'write', wholeBucket: OWN },
        { action: 'write', key: 'logs/', bucket: B },
      ],
      sign: (as) => sdk(new PutBucketLoggingCommand({ Bucket: OWN, BucketLoggingStatus: { LoggingEnabled: { TargetBucket: B, TargetPrefix: 'logs/' } } }), as),
    },
    {
      name: 'PutBucketLogging, target itself',
      scheme: headerWhole,
      needs: [
        { action: 'write', wholeBucket: OWN },
        { action: 'write', key: 'logs/', bucket: OWN },
      ],
      sign: (as) =>
        sdk(new PutBucketLoggingCommand({ Bucket: OWN, BucketLoggingStatus: { LoggingEnabled: { TargetBucket: OWN, TargetPrefix: 'logs/' } } }), as),
    },
    // Object Lock needs its own actions, never implied by write (issue 37).
    {
      name: 'PutObjectLegalHold inside the prefix',
      scheme: headerWhole,
      needs: [{ action: 'legal-hold', key: 'dir/obj.txt' }],
      sign: (as) => sdk(new PutObjectLegalHoldCommand({ Bucket: B, Key: 'dir/obj.txt', LegalHold: { Status: 'OFF' } }), as),
    },
    {
      name: 'PutObjectRetention inside the prefix',
      scheme: headerWhole,
      needs: [{ action: 'retention', key: 'dir/obj.txt' }],
      sign: (as) =>
        sdk(
          new PutObjectRetentionCommand({
            Bucket: B,
            Key: 'dir/obj.txt',
            Retention: { Mode: 'COMPLIANCE', RetainUntilDate: new Date('9999-12-31T00:00:00Z') },
          }),
          as,
        ),
    },
    {
      name: 'PutObject with a legal hold header inside the prefix',
      scheme: headerWhole,
      needs: [
        { action: 'write', key: 'dir/held' },
        { action: 'legal-hold', key: 'dir/held' },
      ],
      sign: (as) => sdk(new PutObjectCommand({ Bucket: B, Key: 'dir/held', Body: 'held', ObjectLockLegalHoldStatus: 'ON' }), as),
    },
    { name: 'HeadBucket', scheme: header, needs: [{ action: 'list', someOf: B }], sign: (as) => sdk(new HeadBucketCommand({ Bucket: B }), as) },
    { name: 'GetBucketLocation', scheme: header, needs: [{ action: 'list', someOf: B }], sign: (as) => sdk(new GetBucketLocationCommand({ Bucket: B }), as) },
  ];
}

/** What each base request of mutation/bases.ts needs, by name. */
export const BASE_NEEDS: Record<string, Need[]> = {
  'sdk PutObject (body digest, CRC32 header, metadata)': [{ action: 'write', key: 'dir/new obj.txt' }],
  'sdk PutObject (WHEN_REQUIRED: digest only)': [{ action: 'write', key: 'plain' }],
  'sdk PutObject stream (aws-chunked, unsigned trailer)': [{ action: 'write', key: 'streamed' }],
  'sdk GetObject (overrides, range)': [{ action: 'read', key: 'obj' }],
  'sdk HeadObject': [{ action: 'read', key: 'obj' }],
  'sdk DeleteObject': [{ action: 'delete', key: 'obj' }],
  'sdk ListObjectsV2': [{ action: 'list', listing: 'd' }],
  'sdk ListObjects': [{ action: 'list', listing: '' }],
  'sdk ListBuckets': ['nothing'],
  'sdk CreateBucket': [{ action: 'write', wholeBucket: 'fz-new' }],
  'sdk CreateMultipartUpload': [{ action: 'write', key: 'mpu2' }],
  'sdk UploadPart': [{ action: 'write', key: 'mpu' }],
  'sdk ListParts': [{ action: 'write', key: 'mpu' }],
  'sdk ListMultipartUploads': [{ action: 'list', listing: '' }],
  'sdk AbortMultipartUpload': [{ action: 'write', key: 'mpu' }],
  'sdk CopyObject': [
    { action: 'write', key: 'copy' },
    { action: 'read', key: 'obj' },
  ],
  'sdk DeleteObjects': [{ action: 'delete', someOf: B }],
  'sdk GetObject, virtual-hosted': [{ action: 'read', key: 'obj' }],
  'sdk PutObject, virtual-hosted': [{ action: 'write', key: 'vh' }],
  'presigned GetObject (overrides)': [{ action: 'read', key: 'obj' }],
  'presigned PutObject (hoisted metadata)': [{ action: 'write', key: 'presigned' }],
  'presigned DeleteObject': [{ action: 'delete', key: 'obj' }],
  'presigned ListObjectsV2': [{ action: 'list', listing: 'dir/' }],
  'presigned UploadPart': [{ action: 'write', key: 'mpu' }],
  'presigned GetObject, virtual-hosted': [{ action: 'read', key: 'dir/obj.txt' }],
  'smithy aws-chunked, signed chunks': [{ action: 'write', key: 'chunked' }],
  'smithy aws-chunked, signed chunks and trailer': [{ action: 'write', key: 'chunked' }],
  'smithy presigned PUT pinning its SHA-256': [{ action: 'write', key: 'pinned' }],
  'aws4fetch ListObjectsV2': [{ action: 'list', listing: 'dir/' }],
  'aws4fetch PutObject (body digest)': [{ action: 'write', key: 'a4f' }],
  'aws4fetch AbortMultipartUpload': [{ action: 'write', key: 'mpu' }],
  'aws4fetch presigned GetObject': [{ action: 'read', key: 'obj' }],
  'SigV2 GetObject (override)': [{ action: 'read', key: 'obj' }],
  'SigV2 PutObject (type, metadata)': [{ action: 'write', key: 'v2put' }],
  'SigV2 DeleteObject': [{ action: 'delete', key: 'obj' }],
  'SigV2 ListObjects (unsigned prefix)': [{ action: 'list', listing: 'dir/' }],
  'SigV2 UploadPart': [{ action: 'write', key: 'mpu' }],
  'SigV2 GetObject, virtual-hosted': [{ action: 'read', key: 'dir/obj.txt' }],
  'SigV2 header GetObject (override)': [{ action: 'read', key: 'obj' }],
  'SigV2 header PutObject (type, metadata, x-amz-date)': [{ action: 'write', key: 'v2hput' }],
  'SigV2 header DeleteObject': [{ action: 'delete', key: 'obj' }],
  'SigV2 header ListObjects (unsigned prefix)': [{ action: 'list', listing: 'dir/' }],
  'SigV2 header PutObjectTagging': [{ action: 'write', key: 'obj' }],
  'SigV2 header GetObject, virtual-hosted': [{ action: 'read', key: 'dir/obj.txt' }],
};
