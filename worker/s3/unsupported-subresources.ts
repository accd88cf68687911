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

/**
 * Query parameters of S3's API (and of Ceph RGW's extensions clients send) that no table here or
 * in operations.ts names: each selects an operation or changes what one does, so a request that
 * carries one is NotImplemented rather than answered as if it did not.
 */
const OTHER_S3_PARAMETERS = new Set([
  'abac',
  'id', // the configuration id of analytics, inventory, metrics and intelligent-tiering
  'metadataConfiguration',
  'metadataInventoryTable',
  'metadataJournalTable',
  'metadataTable',
  'renameObject',
  'select-type',
  'session',
  'usage', // RGW: ListBuckets with the account's usage
  'mdsearch', // RGW: metadata search
]);

/** Whether `name` is a subresource or option of S3's API that the tables here name (implemented or not). */
export function isNamedS3Parameter(name: string): boolean {
  return Object.hasOwn(BUCKET, name) || Object.hasOwn(OBJECT, name) || OTHER_S3_PARAMETERS.has(name);
}

/** The unimplemented operation that `method` with query parameter `name` asks for, if known. */
export function unsupportedOperation(method: string, onObject: boolean, name: string): string | undefined {
  const table = onObject ? OBJECT : BUCKET;
  return Object.hasOwn(table, name) ? table[name]![method as keyof ByMethod] : undefined;
}
