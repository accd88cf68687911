/**
 * Where an S3 request points (bucket, key, query), read from the request view (model/request.ts),
 * the same parse the signature was checked over: the raw path (Hono's params and
 * `new URL().pathname` decode leniently, and S3 keys are arbitrary byte strings in which `//`,
 * `+`, `%` and spaces are all significant) and the query decoded once. Path-style (`/bucket/key`)
 * and virtual-hosted-style (`bucket.<baseDomain>/key`, the view's hostBucket).
 * Key rules (S3 "Object key naming"): valid UTF-8 (else InvalidURI), at most 1024 bytes
 * (KeyTooLongError), and only characters XML 1.0 can carry, since every listing returns keys in
 * XML: TAB, LF, CR, DEL and C1 controls are fine (CR travels as `&#13;`; encoding-type=url is
 * the safe way to list such keys), the other C0 controls (NUL included) and U+FFFE/U+FFFF are
 * InvalidArgument. S3 itself stores those too, and then returns listings no XML parser reads.
 * Known gap (platform): workerd resolves `.`/`..` path segments (also `%2E%2E`) before the
 * worker sees the URL, so a key containing a `..` segment arrives only with its slashes encoded
 * as %2F; sent plainly, the gate refuses it (worker/auth/dot-segments.ts), never a silent rename.
 */
import { S3Error } from '../model/errors.ts';
import type { RequestView } from '../model/request.ts';

export interface S3Address {
  bucket: string | null;
  key: string | null;
  /** The view's decoded query parameters. */
  query: URLSearchParams;
  /** `/bucket/key`, decoded: the Resource of error documents. */
  resource: string;
}

export const MAX_KEY_BYTES = 1024;

export function parseS3Address(view: RequestView): S3Address {
  const path = view.target.rawPath.slice(1);
  let rawBucket: string;
  let rawKey: string;
  if (view.hostBucket !== null) {
    rawBucket = view.hostBucket;
    rawKey = path;
  } else {
    const slash = path.indexOf('/');
    rawBucket = slash < 0 ? path : path.slice(0, slash);
    rawKey = slash < 0 ? '' : path.slice(slash + 1);
  }
  const bucket = rawBucket === '' ? null : percentDecode(rawBucket);
  const key = rawKey === '' ? null : validateKey(percentDecode(rawKey));
  const resource = bucket === null ? '/' : `/${bucket}${key === null ? '' : '/' + key}`;
  return { bucket, key, query: view.query, resource };
}

const SIGNATURE_PARAMS = /^x-amz-(algorithm|credential|date|expires|signedheaders|signature|security-token|content-sha256)$/;

/** The request headers, plus the x-amz-* headers a presigned URL carries in its query (the SDK
 *  hoists x-amz-meta-*, x-amz-acl, x-amz-checksum-mode, ... there). Not merged: the signature's
 *  own parameters, and flexible checksums: a URL is presigned before the body exists, so its
 *  hoisted CRC is the empty body's (AWS documents checksums as unsupported for presigned URLs;
 *  enforcing it would reject every upload; see shared/wire/README.md). */
export function effectiveHeaders({ headers, params, query }: RequestView): Headers {
  if (!query.has('X-Amz-Credential')) return headers;
  const merged = new Headers(headers);
  for (const [name, value] of params) {
    const lower = name.toLowerCase();
    if (!lower.startsWith('x-amz-') || SIGNATURE_PARAMS.test(lower) || /^x-amz-(sdk-)?checksum-(?!mode$)/.test(lower)) continue;
    if (!merged.has(lower)) merged.set(lower, value);
  }
  return merged;
}

/** Strict percent-decoding into UTF-8: a bad escape or invalid UTF-8 is InvalidURI. */
export function percentDecode(raw: string): string {
  const bytes: number[] = [];
  const encoder = new TextEncoder();
  for (let i = 0; i < raw.length; i++) {
    const ch = raw.charCodeAt(i);
    if (ch === 0x25) {
      const hex = raw.slice(i + 1, i + 3);
      if (!/^[0-9a-fA-F]{2}$/.test(hex)) throw new S3Error('InvalidURI');
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else if (ch < 0x80) {
      bytes.push(ch);
    } else {
      const cp = raw.codePointAt(i)!;
      if (cp > 0xffff) i++;
      bytes.push(...encoder.encode(String.fromCodePoint(cp)));
    }
  }
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(new Uint8Array(bytes));
  } catch {
    throw new S3Error('InvalidURI', 'Object key is not valid UTF-8.');
  }
}

/** Applies the key rules; returns the key unchanged. */
export function validateKey(key: string): string {
  const size = new TextEncoder().encode(key).length;
  if (size > MAX_KEY_BYTES) {
    throw new S3Error('KeyTooLongError', undefined, { Size: String(size), MaxSizeAllowed: String(MAX_KEY_BYTES) });
  }
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/.test(key) || /\p{Cs}/u.test(key)) {
    throw new S3Error(
      'InvalidArgument',
      'Object key contains a character that XML 1.0 cannot carry (a control character other than TAB, LF and CR, or U+FFFE/U+FFFF), so no listing could return it.',
      { ArgumentName: 'key' },
    );
  }
  return key;
}

/**
 * Passes at most `maxBytes` through; one byte more errors the stream with EntityTooLarge.
 * The source is locked only while a read is pending, so when the store gives up part-way (a
 * write refused below quorum) the app can still drain what the client is sending: an early
 * answer over an unread body wedges wrangler dev's proxy ("Can't read from request stream after
 * response has been sent"). For the same reason the source is never cancelled; the runtime
 * discards an unread body anyway.
 */
export function limitBody(body: ReadableStream<Uint8Array> | null, maxBytes: number): ReadableStream<Uint8Array> {
  if (body === null) return new ReadableStream({ start: (c) => c.close() });
  let seen = 0;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const reader = body.getReader();
        const next = await reader.read().finally(() => reader.releaseLock());
        if (next.done) return controller.close();
        seen += next.value.byteLength;
        if (seen <= maxBytes) return controller.enqueue(next.value);
        controller.error(tooLarge(seen, maxBytes));
      },
    },
    { highWaterMark: 0 },
  );
}

export function tooLarge(proposed: number, max: number): S3Error {
  return new S3Error('EntityTooLarge', undefined, { ProposedSize: String(proposed), MaxSizeAllowed: String(max) });
}
