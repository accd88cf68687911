/**
 * The test-only checksum factory is right (check values of "123456789"), and the gate's
 * checksum helpers map names and validate declared values as S3 does.
 */

import { describe, expect, it } from 'vitest';
import { assertChecksumValue, checksumAlgorithmOf, checksumEquals, checksumHeaderName } from '../../worker/model/checksums.ts';
import { seededBytes } from '../support/random.ts';
import { checksumOf, crc32, crc32c, crc64nvme, testCreateHasher } from './helpers/checksums.ts';
import { hexToBase64, randomSplit } from './helpers/streams.ts';

describe('test-only checksums', () => {
  it('check values of "123456789"', () => {
    const check = new TextEncoder().encode('123456789');
    const a = crc32();
    a.update(check);
    expect(a.value()).toBe(0xcbf43926);
    const b = crc32c();
    b.update(check);
    expect(b.value()).toBe(0xe3069283);
    const c = crc64nvme();
    c.update(check);
    expect(c.value()).toBe(0xae8b14860a799888n);
    // base64 of the big-endian value
    expect(checksumOf('CRC32', check)).toBe(hexToBase64('cbf43926'));
    expect(checksumOf('CRC64NVME', check)).toBe(hexToBase64('ae8b14860a799888'));
    expect(checksumOf('SHA256', '')).toBe('47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=');
  });

  it('incremental updates give the one-shot value, for every algorithm', () => {
    const data = seededBytes(10_000, 2);
    for (const alg of ['CRC32', 'CRC32C', 'CRC64NVME', 'SHA1', 'SHA256'] as const) {
      const h = testCreateHasher(alg);
      let off = 0;
      for (const n of randomSplit(data.length, 3, 700)) {
        h.update(data.subarray(off, off + n));
        off += n;
      }
      expect(h.digestBase64(), alg).toBe(checksumOf(alg, data));
    }
  });
});

describe('checksum helpers', () => {
  it('header names and algorithms', () => {
    expect(checksumHeaderName('CRC64NVME')).toBe('x-amz-checksum-crc64nvme');
    expect(checksumAlgorithmOf('X-Amz-Checksum-CRC32C')).toBe('CRC32C');
    expect(checksumAlgorithmOf('x-amz-checksum-mode')).toBeUndefined();
    expect(checksumAlgorithmOf('x-amz-checksum-algorithm')).toBeUndefined();
  });

  it('declared values must be base64 of the digest size', () => {
    expect(() => assertChecksumValue('CRC32', 'AAAAAA==', 'header')).not.toThrow();
    expect(() => assertChecksumValue('CRC32', 'AAAAAA', 'header')).not.toThrow(); // padding optional
    // A malformed header value is BadDigest (issue 12: ceph's s3-tests), in a document InvalidRequest.
    expect(() => assertChecksumValue('CRC32', 'AAAAAAAA', 'header')).toThrow(expect.objectContaining({ code: 'BadDigest' }));
    expect(() => assertChecksumValue('CRC32', 'AAAAAAAA', 'document')).toThrow(expect.objectContaining({ code: 'InvalidRequest' }));
    expect(() => assertChecksumValue('CRC64NVME', 'AAAAAA==', 'trailer')).toThrow(expect.objectContaining({ code: 'MalformedTrailerError' }));
    expect(() => assertChecksumValue('SHA256', '!!!!', 'header')).toThrow(expect.objectContaining({ code: 'BadDigest' }));
    expect(checksumEquals('AAAAAA==', 'AAAAAA')).toBe(true);
    expect(checksumEquals('AAAAAA==', 'AAAAAQ==')).toBe(false);
    expect(checksumEquals('!!!!', '!!!!')).toBe(false); // not base64: never equal
  });
});
