/**
 * Byte ranges: the GET/HEAD `Range` header and UploadPartCopy's `x-amz-copy-source-range`.
 * Spec: RFC 9110 section 14 as S3 applies it: one range `bytes=a-b`, `bytes=a-` or `bytes=-n`;
 * a header that does not parse (or asks for several ranges) is ignored and the whole object is
 * returned; a range that parses but cannot be satisfied is 416 InvalidRange (S3 adds
 * RangeRequested and ActualObjectSize; an empty object satisfies no range). GetObject/HeadObject's
 * `partNumber=N`: the bytes of part N (416 InvalidPartNumber past the last part; an object
 * uploaded in one piece has one part).
 */
import { S3Error } from './errors.ts';
import type { ByteRange, ResolvedRange } from './object-store.ts';

const RANGE = /^bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i;

/** Parses a Range header; null means "no usable range": serve the whole object. */
export function parseRange(header: string | null): ByteRange | null {
  if (header === null) return null;
  const m = RANGE.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null;
  if (m[1] === '') return { suffixLength: safeInt(m[2]) };
  const start = safeInt(m[1]);
  if (m[2] === '') return { start };
  const end = safeInt(m[2]);
  return end < start ? null : { start, end };
}

function safeInt(digits: string): number {
  const n = Number(digits);
  return Number.isSafeInteger(n) ? n : Number.MAX_SAFE_INTEGER;
}

/** Resolves a parsed range against the object size, or throws 416 InvalidRange. */
export function resolveRange(range: ByteRange, size: number, requested = formatRange(range)): ResolvedRange {
  const unsatisfiable = () =>
    new S3Error('InvalidRange', undefined, { RangeRequested: requested, ActualObjectSize: String(size) }).withHeaders({
      'Content-Range': `bytes */${size}`,
    });
  if ('suffixLength' in range) {
    if (range.suffixLength === 0 || size === 0) throw unsatisfiable();
    return { start: Math.max(0, size - range.suffixLength), end: size - 1 };
  }
  if (range.start >= size) throw unsatisfiable();
  return { start: range.start, end: Math.min(range.end ?? size - 1, size - 1) };
}

export function formatRange(range: ByteRange): string {
  return 'suffixLength' in range ? `bytes=-${range.suffixLength}` : `bytes=${range.start}-${range.end ?? ''}`;
}

/** `x-amz-copy-source-range: bytes=first-last` (both required), checked against the source size later. */
export function parseCopySourceRange(header: string | null): ResolvedRange | null {
  if (header === null) return null;
  const m = /^bytes=(\d+)-(\d+)$/.exec(header.trim());
  const start = m ? Number(m[1]) : NaN;
  const end = m ? Number(m[2]) : NaN;
  if (!m || !Number.isSafeInteger(start) || !Number.isSafeInteger(end) || end < start) {
    throw new S3Error(
      'InvalidArgument',
      'The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy',
      {
        ArgumentName: 'x-amz-copy-source-range',
        ArgumentValue: header,
      },
    );
  }
  return { start, end };
}

/** Checks an UploadPartCopy range against the source object size. */
export function checkCopySourceRange(range: ResolvedRange, size: number): void {
  if (range.end >= size) {
    throw new S3Error('InvalidRange', `Range specified is not valid for source object of size: ${size}`, {
      RangeRequested: `bytes=${range.start}-${range.end}`,
      ActualObjectSize: String(size),
    });
  }
}

/**
 * The bytes of part `partNumber` (1-based) of an object whose parts have `partSizes`, in order.
 * An empty part resolves to `{ start, end: start - 1 }` (no bytes). 416 InvalidPartNumber past
 * the last part.
 */
export function resolvePart(partSizes: number[], partNumber: number): ResolvedRange {
  if (partNumber < 1 || partNumber > partSizes.length) {
    throw new S3Error('InvalidPartNumber', undefined, { PartNumberRequested: String(partNumber), ActualPartCount: String(partSizes.length) });
  }
  let start = 0;
  for (let i = 0; i < partNumber - 1; i++) start += partSizes[i]!;
  return { start, end: start + partSizes[partNumber - 1]! - 1 };
}
