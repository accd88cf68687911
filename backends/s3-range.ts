// Checks a GetObject answer against the range asked for, instead of trusting it (RFC 9110 §14):
// a server may ignore Range (200 with the whole blob) or widen it (s3rver answers "bytes=0-0"
// with the whole object as a 206), so the S3 backend keeps only the bytes asked for.
// Known gaps: multipart/byteranges answers are refused (we never ask for several ranges).

import type { ByteRange } from './types.ts';

export type RangeAnswer =
  | { ok: true; size: number; skip: number; take: number } // skip `skip` bytes, keep `take`
  | { ok: false; kind: 'Corrupt' | 'Unavailable'; message: string };

/** Which bytes of `res` (status 200 or 206) are the ones asked for, and the blob's total size. */
export function rangeAnswer(res: Response, range?: ByteRange): RangeAnswer {
  let first = 0;
  let last: number;
  let size: number;
  if (res.status === 206) {
    const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(res.headers.get('content-range') ?? '');
    if (!m) return { ok: false, kind: 'Unavailable', message: `206 answer with Content-Range ${res.headers.get('content-range')}` };
    [first, last, size] = [Number(m[1]), Number(m[2]), Number(m[3])];
  } else {
    size = Number(res.headers.get('content-length') ?? NaN);
    if (!Number.isSafeInteger(size)) return { ok: false, kind: 'Unavailable', message: 'GET answer without Content-Length' };
    last = size - 1;
  }
  const want = range ?? { offset: 0, length: size };
  if (want.offset + want.length > size) {
    return { ok: false, kind: 'Corrupt', message: `range ${want.offset}+${want.length} is past the end of ${size} bytes` };
  }
  if (first > want.offset || last < want.offset + want.length - 1) {
    return { ok: false, kind: 'Unavailable', message: `asked for ${want.offset}+${want.length}, got bytes ${first}-${last}` };
  }
  return { ok: true, size, skip: want.offset - first, take: want.length };
}
