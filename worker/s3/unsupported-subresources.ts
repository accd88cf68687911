/**
 * The S3 operations this gateway does not implement, by the query parameter (subresource) that
 * selects them, so that a NotImplemented error names what the client asked for
 * (`GetBucketPolicy is not implemented.`) instead of the operation the request would otherwise
 * have been. Names as in the S3 API reference.
 * Spec: S3 API reference, "Actions" (the request syntax of each bucket and object subresource).
 */

type ByMethod = Partial<Record<'GET' | 'PUT' | 'DELETE' | 'POST' | 'HEAD', string>>;

/** Bucket subresources: parameter -> operation per method. */
const BUCKET: Record<string, ByMethod> = {
  accelerate: { PUT: 'PutBucketAccelerateConfiguration' },
  analytics: { GET: 'GetBucketAnalyticsConfiguration', PUT: 'PutBucketAnalyticsConfiguration', DELETE: 'DeleteBucketAnalyticsConfiguration' },
  'intelligent-tiering': {
    GET: 'GetBucketIntelligentTieringConfiguration',
    PUT: 'PutBucketIntelligentTieringConfiguration',
    DELETE: 'DeleteBucketIntelligentTieringConfiguration',
  },
  inventory: { GET: 'GetBucketInventoryConfiguration', PUT: 'PutBucketInventoryConfiguration', DELETE: 'DeleteBucketInventoryConfiguration' },
  metrics: { GET: 'GetBucketMetricsConfiguration', PUT: 'PutBucketMetricsConfiguration', DELETE: 'DeleteBucketMetricsConfiguration' },
  replication: { PUT: 'PutBucketReplication', DELETE: 'DeleteBucketReplication' },
  requestPayment: { PUT: 'PutBucketRequestPayment' },
  website: { PUT: 'PutBucketWebsite', DELETE: 'DeleteBucketWebsite' },
};

/** Object subresources and options. */
const OBJECT: Record<string, ByMethod> = {
  select: { POST: 'SelectObjectContent' },
  torrent: { GET: 'GetObjectTorrent' },
  // A version is read, deleted and tagged by versionId (versioning.ts); the other operations take none.
  versionId: { PUT: 'PutObject of a version (versionId)', POST: 'a multipart operation on a version (versionId)' },
};

/** The unimplemented operation that `method` with query parameter `name` asks for, if known. */
export function unsupportedOperation(method: string, onObject: boolean, name: string): string | undefined {
  const table = onObject ? OBJECT : BUCKET;
  return Object.hasOwn(table, name) ? table[name]![method as keyof ByMethod] : undefined;
}
