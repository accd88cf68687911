/**
 * Headers that keep an object served by the gateway from acting as a page of the gateway's origin
 * (issue 21): path-style, every bucket shares the origin of the status page and of the other
 * buckets, so an uploaded HTML (or SVG, XML, ...) object opened in a browser would otherwise run
 * its scripts there. Every GetObject and HeadObject answer carries
 *   Content-Security-Policy: sandbox   the document gets an opaque origin and runs no script: it
 *                                      reads no storage, no page memory, no other object of the
 *                                      origin (CSP Level 3, the `sandbox` directive);
 *   X-Content-Type-Options: nosniff    the browser takes the stored Content-Type as it is and
 *                                      never sniffs an object into HTML or script.
 * Our choice where the issue is silent: application/pdf is served without the sandbox, because
 * Chromium's and Firefox's PDF viewers refuse to open in a sandboxed document, and a PDF's own
 * scripts run in the viewer, not in the origin. Objects fetched by scripts of other origins (CORS)
 * or embedded as images and media are not affected: the policy applies only to an object opened
 * as a document. Known gap: a site served from a bucket (S3 website hosting, which the gateway
 * does not implement) would run no script either.
 */

/** Content types served without the sandbox (see above). */
const UNSANDBOXED = /^application\/pdf\s*(;|$)/i;

export function addServedObjectHeaders(headers: Headers): void {
  headers.set('x-content-type-options', 'nosniff');
  if (!UNSANDBOXED.test(headers.get('content-type') ?? '')) headers.set('content-security-policy', 'sandbox');
}
