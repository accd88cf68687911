/** worker/model/checksums.ts: the x-amz-checksum-* encodings, streaming, and FULL_OBJECT combine. */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CHECKSUM_ALGORITHMS, combineCrc, createHasher } from '../../worker/model/checksums.ts';
import { fromBase64 } from '../../worker/model/bytes.ts';
import { prng, randomBytes } from '../support/random.ts';

const CHECK = new TextEncoder().encode('123456789');
const b64 = (hex: string) => Buffer.from(hex, 'hex').toString('base64');

describe('S3 checksum hashers', () => {
  it('encode the check values as S3 does (base64 of the big-endian value)', () => {
    const digest = (alg: (typeof CHECKSUM_ALGORITHMS)[number]) => {
      const h = createHasher(alg);
      h.update(CHECK);
      return h.digestBase64();
    };
    expect(digest('CRC32')).toBe(b64('cbf43926'));
    expect(digest('CRC32C')).toBe(b64('e3069283'));
    expect(digest('CRC64NVME')).toBe(b64('ae8b14860a799888'));
    expect(digest('SHA1')).toBe(createHash('sha1').update(CHECK).digest('base64'));
    expect(digest('SHA256')).toBe(createHash('sha256').update(CHECK).digest('base64'));
    expect(createHasher('CRC32').digestBase64()).toBe('AAAAAA==');
  });

  it('give the same digest however the stream is split', () => {
    const data = randomBytes(prng(2), 100_000);
    for (const alg of CHECKSUM_ALGORITHMS) {
      const whole = createHasher(alg);
      whole.update(data);
      const parts = createHasher(alg);
      for (let off = 0; off < data.length; off += 7_777) parts.update(data.subarray(off, off + 7_777));
      expect(parts.digestBase64(), alg).toBe(whole.digestBase64());
    }
  });

  it('combine part CRCs into the full-object CRC', () => {
    const rand = prng(3);
    const a = randomBytes(rand, 70_000),
      b = randomBytes(rand, 12_345);
    for (const alg of ['CRC32', 'CRC32C', 'CRC64NVME'] as const) {
      const d = (x: Uint8Array) => {
        const h = createHasher(alg);
        h.update(x);
        return fromBase64(h.digestBase64())!;
      };
      const whole = d(new Uint8Array([...a, ...b]));
      expect(combineCrc(alg, d(a), d(b), b.length), alg).toEqual(whole);
    }
  });
});
