/**
 * The bucket instance's methods a request makes on its way (DurableCatalog passes the request's
 * settings stamp with them: model/bucket-settings.ts). Not here, never fenced: what cleans up or
 * records after the fact (releaseUnits, queueGarbage, the repair worklist, upkeep's calls), which
 * must not be refused because a policy changed while the request ran.
 */
export const FENCED_METHOD_NAMES = [
  'getBucket', 'retireBucket', 'getBucketCors', 'setBucketCors', 'getBucketTagging', 'setBucketTagging',
  'setObjectTags', 'getBucketLifecycle', 'setBucketLifecycle', 'getVersioning', 'setVersioning',
  'getObjectLock', 'setObjectLock', 'changeObjectLock', 'getVersion', 'listVersions', 'getManifest',
  'commitManifest', 'removeManifest', 'listManifests', 'insertUpload', 'getUpload', 'putPart',
  'listPartRecords', 'commitUpload', 'getCompletedUpload', 'removeUpload', 'listUploadRecords',
  'prepareWrite', 'preparePart', 'reserveUnits',
] as const;

export type FencedMethod = (typeof FENCED_METHOD_NAMES)[number];

export const FENCED_METHODS: ReadonlySet<string> = new Set(FENCED_METHOD_NAMES);
