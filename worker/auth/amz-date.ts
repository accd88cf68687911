/**
 * Request time for SigV4: `x-amz-date` / `X-Amz-Date` in ISO 8601 basic format
 * (`20130524T000000Z`), or the HTTP `Date` header (RFC 7231 IMF-fixdate), which SigV4 converts to
 * the basic format for the string to sign. Also the clock-skew rule of header auth.
 */

import { S3Error } from '../model/errors.ts';

/** Default allowed skew between the client's clock and ours (AWS uses 15 minutes). */
export const DEFAULT_MAX_SKEW_MS = 15 * 60 * 1000;

/** Parses `YYYYMMDDTHHMMSSZ`; null when malformed or not a real date. */
export function parseAmzDate(s: string): Date | null {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(s);
  if (!m) return null;
  const [y, mo, d, h, mi, se] = m.slice(1).map(Number);
  const date = new Date(Date.UTC(y, mo - 1, d, h, mi, se));
  // Date.UTC rolls 20130231 over into March: reject what does not round-trip.
  return toAmzDate(date) === s ? date : null;
}

/** Date -> `YYYYMMDDTHHMMSSZ`. */
export function toAmzDate(date: Date): string {
  return date.toISOString().replace(/[-:]|\.\d{3}/g, '');
}

/** Parses an HTTP date (IMF-fixdate and the obsolete forms Date.parse knows); null if invalid. */
export function parseHttpDate(s: string): Date | null {
  const ms = Date.parse(s);
  return Number.isNaN(ms) ? null : new Date(ms);
}

/** Throws RequestTimeTooSkewed when `requestTime` is further than `maxSkewMs` from `now`. */
export function assertNotSkewed(requestTime: Date, now: Date, maxSkewMs: number): void {
  if (Math.abs(requestTime.getTime() - now.getTime()) > maxSkewMs) {
    throw new S3Error('RequestTimeTooSkewed', undefined, {
      RequestTime: toAmzDate(requestTime),
      ServerTime: now.toISOString(),
      MaxAllowedSkewMilliseconds: String(maxSkewMs),
    });
  }
}
