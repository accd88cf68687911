/**
 * CORS as S3 does it: a bucket's rules (PutBucketCors) and how a browser request is matched
 * against them. The S3 front door reads and writes the rules (s3/cors.ts); the app answers
 * preflights and adds the headers to every response of a bucket that has rules.
 * Spec: S3 "Using cross-origin resource sharing (CORS)" and "How Amazon S3 evaluates the CORS
 * configuration": the first rule whose AllowedOrigin matches the Origin (at most one `*`
 * wildcard, case-sensitive), whose AllowedMethod has the method (the preflight's
 * Access-Control-Request-Method) and, for a preflight, whose AllowedHeader patterns (at most one
 * `*` each, case-insensitive) cover every Access-Control-Request-Headers entry, applies.
 * Known gap: no per-request credentials logic beyond S3's (Allow-Credentials whenever the rule's
 * origin is not `*`).
 */

export const CORS_METHODS = ['GET', 'PUT', 'POST', 'DELETE', 'HEAD'] as const;
export type CorsMethod = (typeof CORS_METHODS)[number];

export interface CorsRule {
  id?: string;
  allowedOrigins: string[];
  allowedMethods: CorsMethod[];
  allowedHeaders: string[];
  exposeHeaders: string[];
  maxAgeSeconds?: number;
}

/** What a browser request says about itself. For a preflight, `method` is the requested method. */
export interface CorsRequest {
  origin: string;
  method: string;
  /** Access-Control-Request-Headers of a preflight (lower-case names); empty otherwise. */
  requestHeaders: string[];
}

/** `pattern` with at most one `*`, matching any run of characters. */
export function wildcardMatch(pattern: string, value: string): boolean {
  const star = pattern.indexOf('*');
  if (star < 0) return pattern === value;
  const head = pattern.slice(0, star);
  const tail = pattern.slice(star + 1);
  return value.length >= head.length + tail.length && value.startsWith(head) && value.endsWith(tail);
}

/** The rule that applies, or null (the request is not allowed). */
export function matchCorsRule(rules: readonly CorsRule[], r: CorsRequest): CorsRule | null {
  return (
    rules.find(
      (rule) =>
        rule.allowedOrigins.some((o) => wildcardMatch(o, r.origin)) &&
        (rule.allowedMethods as string[]).includes(r.method) &&
        r.requestHeaders.every((h) => rule.allowedHeaders.some((a) => wildcardMatch(a.toLowerCase(), h.toLowerCase()))),
    ) ?? null
  );
}

/** The Access-Control-* headers S3 sends for a request `rule` allows. */
export function corsResponseHeaders(rule: CorsRule, r: CorsRequest, preflight: boolean): Record<string, string> {
  const anyOrigin = rule.allowedOrigins.includes('*');
  const h: Record<string, string> = {
    'Access-Control-Allow-Origin': anyOrigin ? '*' : r.origin,
    'Access-Control-Allow-Methods': rule.allowedMethods.join(', '),
    Vary: 'Origin, Access-Control-Request-Headers, Access-Control-Request-Method',
  };
  if (!anyOrigin) h['Access-Control-Allow-Credentials'] = 'true';
  if (preflight && r.requestHeaders.length) h['Access-Control-Allow-Headers'] = r.requestHeaders.join(', ');
  if (rule.exposeHeaders.length) h['Access-Control-Expose-Headers'] = rule.exposeHeaders.join(', ');
  if (rule.maxAgeSeconds !== undefined) h['Access-Control-Max-Age'] = String(rule.maxAgeSeconds);
  return h;
}
