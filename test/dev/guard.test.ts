/**
 * Hole 6 of issue 11: the local dev port must not hand `/cdn-cgi/` to wrangler (which runs the cron
 * for `/cdn-cgi/handler/scheduled`), however the path is spelled; S3 paths pass untouched.
 */
import { describe, expect, it } from 'vitest';
import { isRefusedDevPath } from '../../dev/guard.ts';

describe('isRefusedDevPath', () => {
  it.each([
    '/cdn-cgi/handler/scheduled',
    '//cdn-cgi/handler/scheduled', // no S3 path: refused in case a server downstream collapses slashes
    '/cdn-cgi/handler/scheduled?cron=*+*+*+*+*&time=1',
    '/cdn-cgi/handler/email',
    '/cdn-cgi/mf/scheduled',
    '/cdn-cgi/',
    '/cdn-cgi',
    '/a/../cdn-cgi/handler/scheduled',
    '/./cdn-cgi/handler/scheduled',
    '/%2e%2e/cdn-cgi/handler/scheduled',
    '/x/%2E%2E/cdn-cgi/handler/scheduled',
    '\\cdn-cgi\\handler\\scheduled',
    '/cdn-cgi\\handler\\scheduled',
    '/cdn-\tcgi/handler/scheduled',
    '/cdn-\ncgi/handler/scheduled',
    '/%63dn-cgi/handler/scheduled',
    '/CDN-CGI/handler/scheduled',
    'http://localhost:8787/cdn-cgi/handler/scheduled',
    'http://localhost:8787/x/../cdn-cgi/handler/scheduled',
    'http://[::1', // does not parse
  ])('refuses %j', (target) => {
    expect(isRefusedDevPath(target)).toBe(true);
  });

  it.each([
    '/',
    '/bucket',
    '/bucket/cdn-cgi/handler/scheduled',
    '/bucket/key?prefix=/cdn-cgi/',
    '/cdn-cgi-like/key',
    '/bucket/a%2F..%2Fb',
    '/_shardgate/status',
    'http://localhost:8787/bucket/key?x-id=GetObject',
  ])('lets %j through', (target) => {
    expect(isRefusedDevPath(target)).toBe(false);
  });
});
