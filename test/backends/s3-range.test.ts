// rangeAnswer(): how the S3 backend reads a GetObject answer against the range it asked for,
// one table row per server behaviour, then end to end with a server that ignores Range.

import { describe, expect, it } from 'vitest';
import { rangeAnswer } from '../../backends/s3-range.ts';
import { S3Backend } from '../../backends/s3.ts';
import { getBytes, OFFLINE_S3, pattern } from './helpers.ts';

const answer = (status: number, headers: Record<string, string>) => new Response(status === 206 || status === 200 ? '' : null, { status, headers });

describe('rangeAnswer', () => {
  const rows: [string, Response, { offset: number; length: number } | undefined, unknown][] = [
    ['200, no range asked', answer(200, { 'content-length': '50' }), undefined, { ok: true, size: 50, skip: 0, take: 50 }],
    ['200 for a range (Range ignored)', answer(200, { 'content-length': '50' }), { offset: 10, length: 5 }, { ok: true, size: 50, skip: 10, take: 5 }],
    ['206, exactly the range', answer(206, { 'content-range': 'bytes 10-14/50' }), { offset: 10, length: 5 }, { ok: true, size: 50, skip: 0, take: 5 }],
    ['206, widened (s3rver bytes=0-0)', answer(206, { 'content-range': 'bytes 0-49/50' }), { offset: 0, length: 1 }, { ok: true, size: 50, skip: 0, take: 1 }],
    ['206, clamped at a short blob', answer(206, { 'content-range': 'bytes 45-49/50' }), { offset: 45, length: 10 }, { ok: false, kind: 'Corrupt' }],
    ['200 for a range past the end', answer(200, { 'content-length': '50' }), { offset: 49, length: 2 }, { ok: false, kind: 'Corrupt' }],
    ['206, narrower than asked', answer(206, { 'content-range': 'bytes 10-12/50' }), { offset: 10, length: 5 }, { ok: false, kind: 'Unavailable' }],
    ['206, unknown total', answer(206, { 'content-range': 'bytes 10-14/*' }), { offset: 10, length: 5 }, { ok: false, kind: 'Unavailable' }],
    ['200 without Content-Length', answer(200, {}), undefined, { ok: false, kind: 'Unavailable' }],
    ['200 for an empty blob', answer(200, { 'content-length': '0' }), undefined, { ok: true, size: 0, skip: 0, take: 0 }],
  ];
  for (const [label, res, range, want] of rows) {
    it(label, () => {
      expect(rangeAnswer(res, range)).toMatchObject(want as object);
    });
  }
});

describe('S3Backend with a server that ignores Range', () => {
  it('returns only the bytes asked for', async () => {
    const blob = pattern(1000);
    const backend = new S3Backend({
      ...OFFLINE_S3,
      id: 'norange',
      fetch: async () => new Response(blob, { status: 200, headers: { 'content-length': '1000' } }),
    });
    expect(await getBytes(backend, 'k', { offset: 600, length: 300 })).toEqual({ bytes: blob.subarray(600, 900), size: 1000 });
  });
});
