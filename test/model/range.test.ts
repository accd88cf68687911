/** Range header parsing and resolution (RFC 9110 as S3 applies it). */
import { describe, expect, it } from 'vitest';
import { S3Error } from '../../worker/model/errors.ts';
import { parseCopySourceRange, parseRange, resolveRange } from '../../worker/model/range.ts';

describe('parseRange + resolveRange', () => {
  it.each([
    ['bytes=0-9', 100, [0, 9]],
    ['bytes=10-', 100, [10, 99]],
    ['bytes=-10', 100, [90, 99]],
    ['bytes=-1000', 100, [0, 99]],
    ['bytes=50-5000', 100, [50, 99]],
    ['BYTES = 1 - 2', 100, [1, 2]],
    ['bytes=99-99', 100, [99, 99]],
  ] as [string, number, [number, number]][])('%s of %d bytes -> %j', (header, size, [start, end]) => {
    expect(resolveRange(parseRange(header)!, size)).toEqual({ start, end });
  });

  it.each([null, 'bytes=', 'bytes=-', 'bytes=5-1', 'bytes=0-1,2-3', 'items=0-1', 'bytes=a-b', 'bytes=1.5-2'])('ignores %j', (header) => {
    expect(parseRange(header)).toBeNull();
  });

  it.each([
    ['bytes=100-', 100],
    ['bytes=-0', 100],
    ['bytes=0-', 0],
    ['bytes=-5', 0],
    ['bytes=99999999999999999999-', 10],
  ] as [string, number][])('%s of %d bytes is 416 InvalidRange', (header, size) => {
    try {
      resolveRange(parseRange(header)!, size);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(S3Error);
      expect((err as S3Error).code).toBe('InvalidRange');
      expect((err as S3Error).headers['Content-Range']).toBe(`bytes */${size}`);
    }
  });

  it('x-amz-copy-source-range needs bytes=first-last', () => {
    expect(parseCopySourceRange('bytes=0-9')).toEqual({ start: 0, end: 9 });
    expect(parseCopySourceRange(null)).toBeNull();
    for (const bad of ['bytes=5-', 'bytes=-5', 'bytes=9-0', '0-9']) expect(() => parseCopySourceRange(bad)).toThrow(S3Error);
  });
});
