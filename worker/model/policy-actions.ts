/**
 * The S3 action names a bucket policy may name without wildcards (AWS refuses any other with
 * "Policy has invalid action"). From the Service Authorization Reference, "Actions defined by
 * Amazon S3": the bucket and object actions, including those of features this gateway does not
 * have, since AWS accepts a policy naming them. Kept lower-case: action names are
 * case-insensitive in IAM.
 */
const NAMES = [
  'AbortMultipartUpload', 'BypassGovernanceRetention', 'CreateBucket', 'DeleteBucket', 'DeleteBucketOwnershipControls',
  'DeleteBucketPolicy', 'DeleteBucketWebsite', 'DeleteObject', 'DeleteObjectTagging', 'DeleteObjectVersion',
  'DeleteObjectVersionTagging', 'GetAccelerateConfiguration', 'GetAnalyticsConfiguration', 'GetBucketAcl', 'GetBucketCORS',
  'GetBucketLocation', 'GetBucketLogging', 'GetBucketNotification', 'GetBucketObjectLockConfiguration', 'GetBucketOwnershipControls',
  'GetBucketPolicy', 'GetBucketPolicyStatus', 'GetBucketPublicAccessBlock', 'GetBucketRequestPayment', 'GetBucketTagging',
  'GetBucketVersioning', 'GetBucketWebsite', 'GetEncryptionConfiguration', 'GetIntelligentTieringConfiguration',
  'GetInventoryConfiguration', 'GetLifecycleConfiguration', 'GetMetricsConfiguration', 'GetObject', 'GetObjectAcl',
  'GetObjectAttributes', 'GetObjectLegalHold', 'GetObjectRetention', 'GetObjectTagging', 'GetObjectTorrent', 'GetObjectVersion',
  'GetObjectVersionAcl', 'GetObjectVersionAttributes', 'GetObjectVersionForReplication', 'GetObjectVersionTagging',
  'GetObjectVersionTorrent', 'GetReplicationConfiguration', 'ListAllMyBuckets', 'ListBucket', 'ListBucketMultipartUploads',
  'ListBucketVersions', 'ListMultipartUploadParts', 'ObjectOwnerOverrideToBucketOwner', 'PutAccelerateConfiguration',
  'PutAnalyticsConfiguration', 'PutBucketAcl', 'PutBucketCORS', 'PutBucketLogging', 'PutBucketNotification',
  'PutBucketObjectLockConfiguration', 'PutBucketOwnershipControls', 'PutBucketPolicy', 'PutBucketPublicAccessBlock',
  'PutBucketRequestPayment', 'PutBucketTagging', 'PutBucketVersioning', 'PutBucketWebsite', 'PutEncryptionConfiguration',
  'PutIntelligentTieringConfiguration', 'PutInventoryConfiguration', 'PutLifecycleConfiguration', 'PutMetricsConfiguration',
  'PutObject', 'PutObjectAcl', 'PutObjectLegalHold', 'PutObjectRetention', 'PutObjectTagging', 'PutObjectVersionAcl',
  'PutObjectVersionTagging', 'PutReplicationConfiguration', 'ReplicateDelete', 'ReplicateObject', 'ReplicateTags',
  'RestoreObject',
];

export const S3_POLICY_ACTIONS: ReadonlySet<string> = new Set(NAMES.map((n) => n.toLowerCase()));
