/**
 * What whatever serves the local dev port must refuse before anything reaches workerd.
 *
 * Under `wrangler dev` (and `unstable_startWorker`), miniflare's entry worker answers paths under
 * `/cdn-cgi/` itself, before the gateway's Worker runs: `/cdn-cgi/handler/scheduled` runs the
 * cron (garbage collection, scrub) for anyone who can reach the port, `/cdn-cgi/handler/email`
 * an email handler, and more may come. On Cloudflare the edge keeps `/cdn-cgi/` to itself, so a
 * gateway never needs it: refuse the whole space. Miniflare matches `new URL(request.url)
 * .pathname`, so every spelling that parses to such a path is refused too: dot segments (also
 * `%2E`), backslashes, tabs and newlines (the WHATWG parser drops them), an absolute-form target,
 * percent-encoded letters, any case. A target that does not parse is refused as well.
 *
 * Pure functions, no Node APIs: the local front (dev/front.ts, the process on the public dev
 * port) calls `isRefusedDevPath(req.url)` on every request head and answers 403 AccessDenied
 * instead of proxying when it is true.
 * Known gaps: plain `wrangler dev` has no hook before miniflare's entry worker, so without the
 * front this guard cannot run (wrangler binds to localhost by default, which limits who can try);
 * a bucket named `cdn-cgi` cannot be used path-style locally (nor on Cloudflare).
 */

/** True when the request target (as on the request line) names the platform's `/cdn-cgi/` space. */
export function isRefusedDevPath(target: string): boolean {
  let pathname: string;
  try {
    // As the server builds the URL: an origin-form target is appended to scheme and host.
    pathname = new URL(target.startsWith('/') ? 'http://dev-guard.invalid' + target : target).pathname;
  } catch {
    return true;
  }
  const rawPath = target.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i, '').split(/[?#]/)[0];
  return [pathname, rawPath].some((p) => PLATFORM_SPACE.test(p) || PLATFORM_SPACE.test(decodeLeniently(p)));
}

/** Any number of leading slashes: a normalising server downstream may collapse them. */
const PLATFORM_SPACE = /^\/+cdn-cgi(\/|$)/i;

/** Percent-decodes what decodes; a malformed escape is kept as it is. */
function decodeLeniently(s: string): string {
  return s.replace(/(%[0-9a-fA-F]{2})+/g, (run) => {
    try {
      return decodeURIComponent(run);
    } catch {
      return run;
    }
  });
}
