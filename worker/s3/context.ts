/**
 * What every S3 handler receives, and the contract of the authentication gate.
 * The gate (`Authenticate`) runs once per request before any handler; handlers read the request
 * body only from `AuthResult.body`, never from `request.body`, so every byte they see has been
 * through verification (SigV4 payload hash, aws-chunked chunk signatures, trailer checksum).
 */
import type { BucketSettings } from '../model/bucket-settings.ts';
import type { ObjectOwnership } from '../model/acl.ts';
import type { Access } from '../model/access.ts';
import type { ChecksumRequest, ObjectStore } from '../model/object-store.ts';
import type { RequestView } from '../model/request.ts';
import type { S3Operation } from './operations.ts';
import type { ResponseOwner } from './response-body.ts';
import type { BucketConfigStore } from '../model/bucket-config-store.ts';

/** The limits and names the front door works with (worker/config/config.ts parses them). */
export interface S3Settings {
  /** Region reported by GetBucketLocation / HeadBucket, accepted as LocationConstraint. */
  region: string;
  /** Virtual-hosted-style base domains: `<bucket>.<baseDomain>`; other hosts are path-style. */
  baseDomains: string[];
  /** Largest PutObject body in bytes; larger is EntityTooLarge before anything is stored. */
  maxObjectSize: number;
  /** Largest UploadPart body in bytes. */
  maxPartSize: number;
  /** Largest request XML document (DeleteObjects, CompleteMultipartUpload) in bytes. */
  maxXmlSize: number;
  /** Before an error response, read and discard at most this much unread request body (0: never); a stall of 1 s ends it (drain.ts). */
  errorDrainBytes: number;
  /** Longest Object Lock retention a request may set, in days from now (s3.maxRetentionDays). */
  maxRetentionDays: number;
  /** Whether some key belongs to another account than the default (model/account.ts): ListBuckets
   *  then reads each bucket's owner; with one account every bucket is the signer's account's. */
  otherAccounts?: boolean;
  /** The Object Ownership of a bucket created without x-amz-object-ownership (model/acl.ts); absent: BucketOwnerEnforced. */
  defaultObjectOwnership?: ObjectOwnership;
  /** Every account a key belongs to (model/account.ts): the ids an ACL grant may name; absent: the default account alone. */
  accounts?: readonly string[];
}

export interface AuthResult {
  /** The payload with any aws-chunked framing removed. It errors (with an S3Error) if a chunk
   *  signature or payload hash fails, so a consumer that reads it to the end stores nothing bad.
   *  null when the request has no body. */
  body: ReadableStream<Uint8Array> | null;
  /** Payload length in bytes when known: Content-Length, or x-amz-decoded-content-length for
   *  aws-chunked; null for an unknown length. */
  decodedContentLength: number | null;
  /** A checksum announced in `x-amz-trailer`: the algorithm now, the value once the body has been
   *  read to its end. The store verifies it while hashing the bytes (one pass, BadDigest). */
  checksum?: ChecksumRequest;
  /** The access key that signed the request (for logs); absent for anonymous requests. */
  accessKeyId?: string;
  /** How it was signed; absent for anonymous requests. */
  signature?: 'sigv4-header' | 'sigv4-query' | 'sigv2-query' | 'sigv2-header' | 'sigv4-post' | 'sigv2-post';
  /**
   * What the signer may do (model/access.ts), checked by s3/authorize.ts before any handler runs
   * and by the operator routes. Absent: an anonymous request let through (every S3 action, never
   * the operator's).
   */
  access?: Access;
}

/** The one verification gate. It verifies `request` as `view` reads it, the view the router then
 *  reads too (model/request.ts). Throws S3Error (AccessDenied, SignatureDoesNotMatch, ...) to
 *  reject. */
/** `owner`: the request's scope (request-scope.ts), whose holdings decide when a stalled body is cut sooner. */
export type Authenticate = (request: Request, view: RequestView, owner?: { contended(): boolean }) => Promise<AuthResult>;

/** What the form gate (worker/auth-gate.ts over auth/post-policy.ts) says of a POST Object form. */
export interface PostFormAuth {
  accessKeyId?: string;
  signature?: 'sigv4-post' | 'sigv2-post';
  /** What the signer may do (anonymous forms: ANONYMOUS_ACCESS). */
  access: Access;
  /** The file size the policy allows (content-length-range); null when it says nothing. */
  lengthRange: { min: number; max: number } | null;
}

/** The gate of browser form uploads (POST Object, s3/post-object.ts). */
export interface PostFormGate {
  /** The request body, guarded as the gate guards bodies (idle timeout, Content-Length, client gone); null without one. */
  body(request: Request): ReadableStream<Uint8Array> | null;
  /** Checks the form's signature and policy against `fields` (lower-case names; `bucket` the
   *  bucket posted to, `key` with `${filename}` replaced). Throws S3Error to refuse. */
  verify(fields: ReadonlyMap<string, string>): Promise<PostFormAuth>;
}

export interface S3Context {
  op: S3Operation;
  /** The raw request (method, URL). Never read its body: use auth.body. */
  request: Request;
  /** Request headers, with the x-amz-* headers of a presigned URL's query merged in. */
  headers: Headers;
  bucket: string | null;
  key: string | null;
  /** The query parameters, decoded: the request view's, which the signature covered. */
  query: URLSearchParams;
  auth: AuthResult;
  store: ObjectStore;
  /** The buckets' configuration (CORS, policy, logging, tags, lifecycle, lock, versioning, encryption). */
  config: BucketConfigStore;
  settings: S3Settings;
  requestId: string;
  /** The owner of what the request acquires; a streamed body ends the request (response-body.ts). */
  scope: RequestOwner;
  /** The bucket policy's check for what a handler fans out (DeleteObjects' entries); absent: no policy applies. */
  policy?: PolicyCheck;
  /** The addressed bucket's account (model/account.ts), as the gate checked it: the owner listings and ACLs report. Absent: the default account. */
  bucketOwner?: string;
  /** The addressed bucket's request-path settings as the gate checked them (model/bucket-settings.ts; its Object Ownership and ACL). */
  bucketRows?: BucketSettings['rows'];
}

/** The owner of what a request acquires, as the front door sees it (worker/app/request-scope.ts). */
export interface RequestOwner extends ResponseOwner {
  /** The S3 operation once known (who holds the budget, for the operator). */
  label: string;
  /** The signer, or an anonymous client's address, once known: whose budget share the request uses. */
  tenant: string | undefined;
  waitUntil(p: Promise<unknown>): void;
  /** A streamed body that will never be sent (an error answer replaced it): cancel it. */
  discardStream(reason: unknown): void;
}

/** What a handler asks of the bucket's policy for requests it fans out (DeleteObjects' entries; policy-gate.ts). */
export interface PolicyCheck {
  deniesObject(actions: readonly string[], key: string): boolean;
}

export type S3Handler = (s3: S3Context) => Promise<Response>;

/** Hono environment of the app (worker/app/app.ts). */
export interface AppEnv {
  Variables: {
    requestId: string;
    scope: RequestOwner;
    auth: AuthResult;
    resource: string;
    /** The request view of an operator request (admin.ts). */
    view: RequestView;
    /** The S3 operation (AWS's name), bucket and key of an S3 request, once known (for its log line). */
    operation: S3Operation | 'PostObject';
    bucket: string | null;
    key: string | null;
    /** The request was let in by an ACL (s3/acl-access.ts): the access log's aclRequired field. */
    aclRequired?: boolean;
  };
}
