/**
 * PostObject: a browser form upload (multipart/form-data POST to the bucket URL), what
 * `generate_presigned_post` (boto3) and `createPresignedPost` (@aws-sdk/s3-presigned-post) make.
 * The request is not signed: the form carries a signed policy (auth/post-policy.ts, through the
 * app's PostFormGate). Order, so a refused form stores nothing and a big file is never held:
 *   1. the fields before the `file` field are read (form-data.ts; at most 20 KiB);
 *   2. `key` is required; `${filename}` in it becomes the file's name;
 *   3. the policy: signature, expiration, every condition (the bucket posted to and the key as
 *      stored count as fields);
 *   4. the signer's scope (model/access.ts): `write` on the key, as for PutObject; then the
 *      bucket policy's Deny statements (policy-gate.ts), the fields standing for the headers;
 *   5. the fields as PutObject's headers: Content-Type, Cache-Control, Content-Disposition,
 *      Content-Encoding, Content-Language, Expires, x-amz-meta-*, x-amz-checksum-*, `acl`
 *      (owner-only, acl-headers.ts), `tagging` (an XML Tagging document, as S3 takes it);
 *      features we lack (SSE, object lock, storage classes) NotImplemented as for PutObject;
 *   6. the file's size, known before its first byte (form-data.ts), against the gateway's
 *      maximum and the policy's content-length-range: EntityTooLarge / EntityTooSmall before
 *      anything is stored; the stream is limited to the range's maximum besides, and the store
 *      aborts a write whose stream errors (no object, shards discarded, reservation collected);
 *   7. the answer: a redirect (303) to `success_action_redirect` (or the legacy `redirect`) with
 *      bucket, key and etag in its query, when it is an http(s) URL; else `success_action_status`
 *      200 (empty), 201 (a PostResponse document) or 204, the default (any other value too).
 * CORS headers are added by the app as for every S3 response (the bucket's rules, method POST).
 * Spec: S3 "POST Object", "Browser-based uploads using POST".
 */
import { newObjectAcl } from './acl.ts';
import { withAcl } from '../model/acl.ts';
import { knownAccounts } from './acl-headers.ts';
import { S3Error } from '../model/errors.ts';
import type { ObjectStore } from '../model/object-store.ts';
import { MAX_OBJECT_TAGS } from '../model/tagging.ts';
import { checksumResponseHeaders, readChecksumRequest } from './checksum-headers.ts';
import type { AuthResult, PostFormGate, S3Settings } from './context.ts';
import { formBoundary, readForm } from './form-data.ts';
import { enforceBucketPolicy } from './policy-gate.ts';
import { readMetadata } from './headers.ts';
import { assertSupportedHeaders } from './operations.ts';
import { readSseRequest, sseResponseHeaders } from './sse-headers.ts';
import { limitBody, tooLarge, validateKey, type S3Address } from './request.ts';
import { parseTaggingXml } from './tagging.ts';
import { el } from './xml.ts';
import type { BucketConfigStore } from '../model/bucket-config-store.ts';

export interface PostObjectInput {
  request: Request;
  addr: S3Address;
  /** The bucket named by the Host (virtual-hosted style), for the object's Location. */
  hostBucket: string | null;
  gate: PostFormGate;
  store: ObjectStore;
  config: Pick<BucketConfigStore, 'bucketSettings' | 'fetchBucketSettings'>;
  settings: S3Settings;
  /** Tells the app what the form gate found (for its log and the drain of a refused body). */
  setAuth(auth: AuthResult): void;
  /** Whether the form came over TLS or from this machine: an SSE-C key field needs one (app/sse-transport.ts). */
  secureTransport: boolean;
}

/** Form fields that become PutObject's headers of the same name. */
const HEADER_FIELDS =
  /^(content-type|cache-control|content-disposition|content-encoding|content-language|expires|x-amz-meta-.+|x-amz-checksum-.+|x-amz-storage-class|x-amz-server-side-encryption.*|x-amz-website-redirect-location|x-amz-object-lock-.+|x-amz-grant-.+)$/;

/** A field value as a header value: its UTF-8 bytes one character each (as headers arrive), no line breaks. */
function headerValue(name: string, value: string): string {
  if (/[\r\n\0]/.test(value)) throw new S3Error('InvalidArgument', `The form field ${name} contains a line break.`, { ArgumentName: name });
  return String.fromCharCode(...new TextEncoder().encode(value));
}

function fieldHeaders(fields: ReadonlyMap<string, string>): Headers {
  const headers = new Headers();
  for (const [name, value] of fields) {
    if (HEADER_FIELDS.test(name)) headers.set(name, headerValue(name, value));
  }
  const acl = fields.get('acl');
  if (acl !== undefined) headers.set('x-amz-acl', headerValue('acl', acl));
  return headers;
}

function objectUrl(request: Request, addr: S3Address, hostBucket: string | null, key: string): string {
  const path = key.split('/').map(encodeURIComponent).join('/');
  const origin = new URL(request.url).origin;
  return hostBucket !== null ? `${origin}/${path}` : `${origin}/${encodeURIComponent(addr.bucket!)}/${path}`;
}

function redirectTarget(value: string | undefined): URL | null {
  if (!value) return null;
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : null;
  } catch {
    return null;
  }
}

export async function PostObject(input: PostObjectInput): Promise<Response> {
  const { request, addr, gate, store, config, settings } = input;
  const bucket = addr.bucket!;
  const boundary = formBoundary(request.headers.get('content-type'));
  const declared = request.headers.get('content-length');
  const contentLength = declared !== null && /^\d+$/.test(declared) ? Number(declared) : null;
  const raw = gate.body(request);
  input.setAuth({ body: raw, decodedContentLength: contentLength });
  if (raw === null) throw new S3Error('MalformedPOSTRequest');
  const { fields, file } = await readForm(raw, boundary, contentLength);

  const template = fields.get('key');
  if (template === undefined) {
    throw new S3Error('InvalidArgument', "Bucket POST must contain a field named 'key'.  If it is specified, please check the order of the fields.", {
      ArgumentName: 'key',
      ArgumentValue: '',
    });
  }
  const key = template.split('${filename}').join(file.filename);
  if (key === '') throw new S3Error('InvalidArgument', 'User key must have a length greater than 0.', { ArgumentName: 'key', ArgumentValue: '' });
  validateKey(key);
  const checked = new Map(fields);
  checked.set('key', key);
  checked.set('bucket', bucket);

  const auth = await input.gate.verify(checked);
  input.setAuth({ body: raw, decodedContentLength: contentLength, accessKeyId: auth.accessKeyId, signature: auth.signature, access: auth.access });
  if (!auth.access.allowsObject('write', bucket, key)) throw new S3Error('AccessDenied');

  const headers = fieldHeaders(fields);
  // The bucket policy, as for the PutObject this form is (its fields as the request's headers).
  const policyGate = await enforceBucketPolicy(store, config, {
    op: 'PutObject',
    addr: { ...addr, key },
    headers,
    url: request.url,
    auth: { body: null, decodedContentLength: contentLength, accessKeyId: auth.accessKeyId, signature: auth.signature, access: auth.access },
    region: settings.region,
    otherAccounts: settings.otherAccounts ?? false,
    knownAccount: knownAccounts(settings),
  });
  assertSupportedHeaders(headers);
  const rows = policyGate.rows;
  const metadata = withAcl(readMetadata(headers), newObjectAcl(headers, rows, policyGate.owner, auth.access.account ?? null, knownAccounts(settings)));
  const tagging = fields.get('tagging');
  if (tagging !== undefined && tagging.trim() !== '') {
    const tags = parseTaggingXml(tagging, MAX_OBJECT_TAGS);
    if (tags.length) metadata.tags = tags;
  }
  const checksum = readChecksumRequest(headers, undefined);
  if (!input.secureTransport && headers.has('x-amz-server-side-encryption-customer-key')) {
    throw new S3Error('InvalidRequest', 'Requests specifying Server Side Encryption with Customer provided keys must be made over a secure connection.');
  }
  const sse = readSseRequest(headers); // SSE-S3 or SSE-C fields, checked as the headers of a PUT

  const range = auth.lengthRange;
  const max = Math.min(settings.maxObjectSize, range?.max ?? Infinity);
  if (file.size > settings.maxObjectSize) throw tooLarge(file.size, settings.maxObjectSize);
  if (range && file.size > range.max) throw tooLarge(file.size, range.max);
  if (range && file.size < range.min) throw new S3Error('EntityTooSmall', undefined, { ProposedSize: String(file.size), MinSizeAllowed: String(range.min) });

  // Under the policy's fence: a policy changed since this isolate saw it is checked again before the store acts.
  const result = await policyGate.run(() =>
    store.putObject(bucket, key, limitBody(file.body, max), { contentLength: file.size, contentMD5: null, metadata, checksum, conditions: {}, sse }),
  );

  const location = objectUrl(request, addr, input.hostBucket, key);
  const answer = { ETag: result.etag, Location: location, ...checksumResponseHeaders(result.checksum), ...sseResponseHeaders(result.sse) };
  const redirect = redirectTarget(fields.get('success_action_redirect') ?? fields.get('redirect'));
  if (redirect) {
    for (const [name, value] of [
      ['bucket', bucket],
      ['key', key],
      ['etag', result.etag],
    ])
      redirect.searchParams.append(name!, value!);
    // AWS writes the quotes of the ETag as %22 (URLSearchParams does too).
    return new Response(null, { status: 303, headers: { ...answer, Location: redirect.toString() } });
  }
  const status = fields.get('success_action_status');
  if (status === '201') {
    // No namespace, as S3's own PostResponse (API reference, POST Object, "Examples"): a client
    // reading <Key> without one (ceph/s3-tests does) finds it.
    const doc = `<?xml version="1.0" encoding="UTF-8"?>\n<PostResponse>${el('Location', location)}${el('Bucket', bucket)}${el('Key', key)}${el('ETag', result.etag)}</PostResponse>`;
    return new Response(doc, { status: 201, headers: { ...answer, 'Content-Type': 'application/xml' } });
  }
  return new Response(null, { status: status === '200' ? 200 : 204, headers: answer });
}
