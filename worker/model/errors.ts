/**
 * S3Error: the one error type of the S3 object model, and the table of S3 error codes we use.
 * The model and every layer of worker/ built on it (s3, auth, engine, upkeep, catalog) throw
 * S3Error for what a client can act on. Backends throw BackendError and the coder CoderError
 * (leaves that know nothing of S3); the engine's internal QuorumError and ShardReadError say
 * "not enough storage answered". worker/app/error-map.ts is the one place that maps those to S3Error.
 * Codes, statuses and messages follow the AWS S3 API reference ("Error responses"); the XML body
 * has AWS's shape: <Error><Code/><Message/>[extra fields]<Resource/><RequestId/></Error>.
 */

const S3_ERRORS = {
  AccessDenied: [403, 'Access Denied'],
  AuthorizationHeaderMalformed: [400, 'The authorization header is malformed.'],
  AuthorizationQueryParametersError: [400, 'Error parsing the X-Amz-Credential parameter.'],
  AccessControlListNotSupported: [400, 'The bucket does not allow ACLs'],
  InvalidBucketAclWithObjectOwnership: [400, "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting"],
  OwnershipControlsNotFoundError: [404, 'The bucket ownership controls were not found'],
  UnresolvableGrantByEmailAddress: [400, 'The email address you provided does not match any account on record.'],
  AccessForbidden: [
    403,
    "CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the resource's CORS spec.",
  ],
  BadDigest: [400, 'The Content-MD5 or checksum value that you specified did not match what the server received.'],
  BucketAlreadyExists: [409, 'The requested bucket name is not available.'],
  BucketAlreadyOwnedByYou: [409, 'Your previous request to create the named bucket succeeded and you already own it.'],
  BucketNotEmpty: [409, 'The bucket you tried to delete is not empty.'],
  OperationAborted: [409, 'A conflicting conditional operation is currently in progress against this resource. Try again.'],
  BadRequest: [400, 'Bad Request'],
  EntityTooLarge: [400, 'Your proposed upload exceeds the maximum allowed object size.'],
  EntityTooSmall: [400, 'Your proposed upload is smaller than the minimum allowed object size.'],
  ExpiredToken: [400, 'The provided token has expired.'],
  IncompleteBody: [400, 'You did not provide the number of bytes specified by the Content-Length HTTP header.'],
  InternalError: [500, 'We encountered an internal error. Please try again.'],
  InvalidAccessKeyId: [403, 'The AWS access key Id you provided does not exist in our records.'],
  IllegalLocationConstraintException: [400, 'The location constraint is incompatible for the region specific endpoint this request was sent to.'],
  InvalidArgument: [400, 'Invalid Argument'],
  InvalidEncryptionAlgorithmError: [400, 'The encryption request you specified is not valid. The valid value is AES256.'],
  InvalidBucketName: [400, 'The specified bucket is not valid.'],
  InvalidBucketState: [409, 'The request is not valid with the current state of the bucket.'],
  InvalidDigest: [400, 'The Content-MD5 or checksum value that you specified is not valid.'],
  IncorrectNumberOfFilesInPostRequest: [400, 'POST requires exactly one file upload per request.'],
  InvalidPolicyDocument: [400, 'The content of the form does not meet the conditions specified in the policy document.'],
  InvalidPart: [
    400,
    "One or more of the specified parts could not be found. The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.",
  ],
  InvalidPartNumber: [416, 'The requested partnumber is not satisfiable'],
  InvalidPartOrder: [400, 'The list of parts was not in ascending order. Parts must be ordered by part number.'],
  InvalidRange: [416, 'The requested range is not satisfiable'],
  InvalidRequest: [400, 'Invalid Request'],
  InvalidStorageClass: [400, 'The storage class you specified is not valid'],
  InvalidLocationConstraint: [400, 'The specified location-constraint is not valid'],
  InvalidObjectState: [403, 'The operation is not valid for the current state of the object.'],
  // An Object Lock default retention period out of range: RGW's code (AWS documents none for it; docs/COMPATIBILITY.md).
  InvalidRetentionPeriod: [400, 'The retention period specified is not valid.'],
  InvalidTag: [400, 'The tag provided was not a valid tag.'],
  InvalidTargetBucketForLogging: [
    400,
    'The target bucket for logging does not exist, is not owned by you, or does not have the appropriate grants for the log-delivery group.',
  ],
  InvalidURI: [400, "Couldn't parse the specified URI."],
  KeyTooLongError: [400, 'Your key is too long'],
  MalformedTrailerError: [400, 'The request contained trailing data that was not well-formed or did not conform to our published schema.'],
  MalformedXML: [400, 'The XML you provided was not well-formed or did not validate against our published schema.'],
  MalformedPolicy: [400, "Policies must be valid JSON and the first byte must be '{'"],
  MalformedPOSTRequest: [400, 'The body of your POST request is not well-formed multipart/form-data.'],
  MaxPostPreDataLengthExceededError: [400, 'Your POST request fields preceding the upload file were too large.'],
  MetadataTooLarge: [400, 'Your metadata headers exceed the maximum allowed metadata size.'],
  MethodNotAllowed: [405, 'The specified method is not allowed against this resource.'],
  MissingContentLength: [411, 'You must provide the Content-Length HTTP header.'],
  NoSuchBucket: [404, 'The specified bucket does not exist.'],
  NoSuchBucketPolicy: [404, 'The bucket policy does not exist'],
  NoSuchCORSConfiguration: [404, 'The CORS configuration does not exist'],
  NoSuchKey: [404, 'The specified key does not exist.'],
  NoSuchObjectLockConfiguration: [404, 'The specified object does not have a ObjectLock configuration'],
  NoSuchLifecycleConfiguration: [404, 'The lifecycle configuration does not exist'],
  NoSuchPublicAccessBlockConfiguration: [404, 'The public access block configuration was not found'],
  NoSuchTagSet: [404, 'The TagSet does not exist'],
  NoSuchVersion: [404, 'The specified version does not exist.'],
  NoSuchUpload: [404, 'The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.'],
  NoSuchWebsiteConfiguration: [404, 'The specified bucket does not have a website configuration'],
  NotModified: [304, 'Not Modified'],
  RequestTimeout: [400, 'Your socket connection to the server was not read from or written to within the timeout period.'],
  // SSE-KMS (model/kms-key.ts): the codes S3 answers when the KMS key a request names cannot be used (KMS's own exception names, 400).
  'KMS.DisabledException': [400, 'The request was rejected because the specified KMS key is not enabled.'],
  'KMS.NotFoundException': [400, 'Invalid keyId'],
  'KMS.KMSInvalidStateException': [400, 'The request was rejected because the state of the specified resource is not valid for this request.'],
  NotImplemented: [501, 'A header you provided implies functionality that is not implemented.'],
  ObjectLockConfigurationNotFoundError: [404, 'Object Lock configuration does not exist for this bucket'],
  PreconditionFailed: [412, 'At least one of the pre-conditions you specified did not hold'],
  ReplicationConfigurationNotFoundError: [404, 'The replication configuration was not found'],
  RequestHeaderSectionTooLarge: [400, 'Your request header section exceeds the maximum allowed size.'],
  RequestTimeTooSkewed: [403, 'The difference between the request time and the current time is too large.'],
  ServerSideEncryptionConfigurationNotFoundError: [404, 'The server side encryption configuration was not found'],
  ServiceUnavailable: [503, 'Reduce your request rate.'],
  SignatureDoesNotMatch: [403, 'The request signature we calculated does not match the signature you provided. Check your key and signing method.'],
  SlowDown: [503, 'Please reduce your request rate.'],
  // Not AWS's (S3 has no bucket quota): Ceph RGW's answer to a write past a bucket quota (docs/QUOTAS.md).
  QuotaExceeded: [403, 'The bucket quota would be exceeded by this write.'],
  UnexpectedContent: [400, 'This request does not support content'],
  MalformedACLError: [400, 'The XML you provided was not well-formed or did not validate against our published schema.'],
  XAmzContentSHA256Mismatch: [400, "The provided 'x-amz-content-sha256' header does not match what was computed."],
  ConditionalRequestConflict: [409, 'The conditional request cannot succeed due to a conflicting operation against this resource.'],
} as const satisfies Record<string, readonly [number, string]>;

export type S3ErrorCode = keyof typeof S3_ERRORS;

export class S3Error extends Error {
  readonly status: number;
  /** Response headers AWS sends with this error (ETag on 304, Content-Range on 416, ...). */
  readonly headers: Record<string, string> = {};

  /** `fields` become extra XML elements (for example Key, BucketName, ArgumentName); `cause` is
   *  for the logs only, never sent. */
  constructor(
    readonly code: S3ErrorCode,
    message?: string,
    readonly fields: Record<string, string> = {},
    options?: { cause?: unknown },
  ) {
    super(message ?? S3_ERRORS[code][1], options);
    this.name = 'S3Error';
    this.status = S3_ERRORS[code][0];
  }

  /** Adds response headers to this error (chainable: `throw new S3Error(...).withHeaders({...})`). */
  withHeaders(headers: Record<string, string>): this {
    Object.assign(this.headers, headers);
    return this;
  }

  /** The AWS-shaped error document. HEAD responses must drop the body (see app onError). */
  toXml(resource: string, requestId: string): string {
    const extra = Object.entries(this.fields)
      .map(([k, v]) => `<${k}>${escapeXml(v)}</${k}>`)
      .join('');
    return (
      '<?xml version="1.0" encoding="UTF-8"?>\n' +
      `<Error><Code>${this.code}</Code><Message>${escapeXml(this.message)}</Message>${extra}` +
      `<Resource>${escapeXml(resource)}</Resource><RequestId>${escapeXml(requestId)}</RequestId></Error>`
    );
  }
}

/**
 * The client went away before its request body ended (the platform errors the body stream:
 * workerd says "Network connection lost."). Answered IncompleteBody, if anyone still listens, and
 * logged as a client abort: nothing on our side failed.
 */
export function clientAborted(cause: unknown): S3Error {
  return new S3Error('IncompleteBody', 'The connection closed before the request body ended.', {}, { cause: new ClientAbort(cause) });
}

/** True for the error `clientAborted` makes. */
export function isClientAbort(err: S3Error): boolean {
  return err.cause instanceof ClientAbort;
}

class ClientAbort {
  constructor(readonly reason: unknown) {}
}

/** Escapes XML text. CR becomes `&#13;`: a literal CR would be read back as LF (XML 1.0 end-of-line
 *  handling), and object keys may contain one. */
export function escapeXml(s: string): string {
  return s.replace(/[&<>"'\r]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;', '\r': '&#13;' })[c]!);
}
