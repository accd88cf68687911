/** splitRawUrl keeps the path and query exactly as sent (no URL parsing, no normalisation). */

import { describe, expect, it } from 'vitest';
import { splitRawUrl } from '../../worker/model/raw-url.ts';

describe('splitRawUrl', () => {
  it.each([
    ['/b/k?x=1', { host: '', rawPath: '/b/k', rawQuery: 'x=1' }],
    ['/b/./a/../k//x?', { host: '', rawPath: '/b/./a/../k//x', rawQuery: '' }],
    ['/b/a%2Fb%7e?prefix=a+b&uploads', { host: '', rawPath: '/b/a%2Fb%7e', rawQuery: 'prefix=a+b&uploads' }],
    ['http://h:9000/b/k?q=%3F?x', { host: 'h:9000', rawPath: '/b/k', rawQuery: 'q=%3F?x' }],
    ['https://h?delete', { host: 'h', rawPath: '/', rawQuery: 'delete' }],
    ['https://h', { host: 'h', rawPath: '/', rawQuery: '' }],
    ['/k#frag', { host: '', rawPath: '/k', rawQuery: '' }],
  ])('%j', (raw, expected) => {
    expect(splitRawUrl(raw)).toEqual(expected);
  });
});
