// The backend contract against MemoryBackend, the reference implementation, plus the
// UTF-8 key order it promises (JavaScript's default sort is UTF-16 order).

import { describe, expect, it } from 'vitest';
import { MemoryBackend, compareUtf8 } from '../../backends/memory.ts';
import { byUtf8, runBackendContract } from './contract.ts';

runBackendContract('memory', () => new MemoryBackend({ id: 'mem-a', domain: 'local/a' }));

describe('compareUtf8', () => {
  it('orders astral characters after U+FFFD, unlike UTF-16 order', () => {
    const keys = ['\uFFFD', '\u{1F600}', 'z', 'é'];
    expect([...keys].sort()).toEqual(['z', 'é', '\u{1F600}', '\uFFFD']); // UTF-16: surrogates first
    expect([...keys].sort(compareUtf8)).toEqual(['z', 'é', '\uFFFD', '\u{1F600}']);
    expect([...keys].sort(compareUtf8)).toEqual([...keys].sort(byUtf8));
  });
});
