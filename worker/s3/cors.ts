/**
 * CORS on the wire: answering a browser's preflight (`OPTIONS` with Origin and
 * Access-Control-Request-Method; never signed, so it is answered before the authentication gate)
 * and adding Access-Control-* headers to the responses of a bucket whose rules allow the request.
 * Spec: S3 "Using cross-origin resource sharing (CORS)": a preflight without Origin or
 * Access-Control-Request-Method is 400 BadRequest; on a bucket without CORS rules, or when no
 * rule matches, 403 AccessForbidden; otherwise 200 with the allowed origin, methods, requested
 * headers, exposed headers and max age. Actual requests get the headers of the matching rule
 * (origin and method), also on error responses, so a page can read S3's error.
 * Rules and matching: model/cors.ts; storage: PutBucketCors (bucket-cors.ts).
 */
import { corsResponseHeaders, matchCorsRule, type CorsRequest } from '../model/cors.ts';
import { S3Error } from '../model/errors.ts';
import { requestView } from '../model/request.ts';
import type { BucketConfigStore } from '../model/bucket-config-store.ts';

/** What CORS answers read of a bucket: its rules. */
type CorsSource = Pick<BucketConfigStore, 'findBucketCors'>;
import type { S3Settings } from './context.ts';
import { parseS3Address } from './request.ts';

function requestedHeaders(headers: Headers): string[] {
  return (headers.get('access-control-request-headers') ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter(Boolean);
}

/** Rules of the bucket `request` addresses, or null (no bucket, unparseable address, no rules). */
async function rulesFor(request: Request, config: CorsSource, settings: S3Settings) {
  let bucket: string | null;
  try {
    bucket = parseS3Address(requestView(request, settings.baseDomains)).bucket;
  } catch {
    return null;
  }
  if (bucket === null) return null;
  return config.findBucketCors(bucket).catch((err: unknown) => {
    if (err instanceof S3Error && err.code === 'NoSuchBucket') return null;
    throw err;
  });
}

/** Answers a CORS preflight (an OPTIONS request). */
export async function corsPreflight(request: Request, config: CorsSource, settings: S3Settings): Promise<Response> {
  const origin = request.headers.get('origin');
  if (origin === null) throw new S3Error('BadRequest', 'Insufficient information. Origin request header needed.');
  const method = request.headers.get('access-control-request-method');
  if (method === null) throw new S3Error('BadRequest', 'Invalid Access-Control-Request-Method: null');
  const rules = await rulesFor(request, config, settings);
  if (!rules) throw new S3Error('AccessForbidden', 'CORSResponse: CORS is not enabled for this bucket.', { Method: method, ResourceType: 'BUCKET' });
  const cors: CorsRequest = { origin, method, requestHeaders: requestedHeaders(request.headers) };
  const rule = matchCorsRule(rules, cors);
  if (!rule) throw new S3Error('AccessForbidden', undefined, { Method: method, ResourceType: 'OBJECT' });
  return new Response(null, { status: 200, headers: corsResponseHeaders(rule, cors, true) });
}

/** Adds the Access-Control-* headers to `response` when the request came from a page (Origin)
 *  and a CORS rule of its bucket allows it. A failure to read the rules leaves the response as it is. */
export async function addCorsHeaders(request: Request, response: Response, config: CorsSource, settings: S3Settings): Promise<void> {
  const origin = request.headers.get('origin');
  if (origin === null || request.method === 'OPTIONS') return;
  const rules = await rulesFor(request, config, settings).catch(() => null);
  const cors: CorsRequest = { origin, method: request.method, requestHeaders: [] };
  const rule = rules && matchCorsRule(rules, cors);
  if (!rule) return;
  for (const [name, value] of Object.entries(corsResponseHeaders(rule, cors, false))) response.headers.set(name, value);
}
