/**
 * Raw-request tests of hostile input: malformed, hostile and huge XML (DeleteObjects,
 * CompleteMultipartUpload), DeleteObjects digests, and hostile keys (`../`, `//`, control
 * characters, invalid UTF-8, 1024/1025-byte keys), which must be refused or round-trip exactly.
 */
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crc32B64 } from './conformance/context.ts';
import { startTestWorker, type Gate, type TestWorker } from './harness.ts';
import { createRawBucket, errorFields, md5Base64, raw, rawSocket } from './raw-http.ts';

// Run against the product itself (the erasure-coded engine behind the real gate, here with
// anonymous requests allowed so raw unsigned requests reach the protocol checks).
function rawInputSuite(gate: Gate): void {
  describe(`gate: ${gate}`, () => {
    let worker: TestWorker;
    let url: URL;

    beforeAll(async () => {
      worker = await startTestWorker(gate);
      url = worker.url;
      const created = await createRawBucket(url, '/rawi');
      expect(created.status, created.text).toBe(200); // the gateway's answer says why, if not
    });
    afterAll(async () => {
      await worker?.dispose();
    });

    const deleteXml = (...keys: string[]) => `<Delete>${keys.map((k) => `<Object><Key>${k}</Key></Object>`).join('')}</Delete>`;
    const postDelete = (body: string | Readable, headers: Record<string, string> = typeof body === 'string' ? { 'content-md5': md5Base64(body) } : {}) =>
      raw(url, { method: 'POST', path: '/rawi?delete', headers, body });

    describe('request XML', () => {
      const MALFORMED = [
        ['empty', ''],
        ['not XML', 'hello'],
        ['unclosed', '<Delete><Object><Key>a</Key></Object>'],
        ['mismatched', '<Delete><Object><Key>a</Object></Key></Delete>'],
        ['two roots', '<Delete></Delete><Delete></Delete>'],
        ['wrong root', '<Remove><Object><Key>a</Key></Object></Remove>'],
        ['bare ampersand', '<Delete><Object><Key>a&b</Key></Object></Delete>'],
        ['unknown entity', '<Delete><Object><Key>&foo;</Key></Object></Delete>'],
        ['NUL reference', '<Delete><Object><Key>&#0;</Key></Object></Delete>'],
        ['control character reference (not allowed in XML 1.0)', '<Delete><Object><Key>a&#1;b</Key></Object></Delete>'],
        ['doctype', '<!DOCTYPE d [<!ENTITY a "aaaa">]><Delete><Object><Key>&a;</Key></Object></Delete>'],
        [
          'billion laughs',
          '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;">]><Delete><Object><Key>&lol2;</Key></Object></Delete>',
        ],
        ['deep nesting', '<Delete>' + '<a>'.repeat(5000) + '</a>'.repeat(5000) + '</Delete>'],
        ['no objects', '<Delete></Delete>'],
        ['object without key', '<Delete><Object><VersionId>1</VersionId></Object></Delete>'],
        ['repeated key', '<Delete><Object><Key>a</Key><Key>b</Key></Object></Delete>'],
        ['attribute without value', '<Delete quiet><Object><Key>a</Key></Object></Delete>'],
        ['1001 objects', deleteXml(...Array.from({ length: 1001 }, (_, i) => `k${i}`))],
      ];

      it.each(MALFORMED)('DeleteObjects with %s is MalformedXML', async (_name, body) => {
        const res = await postDelete(body);
        expect(res.status).toBe(400);
        expect(errorFields(res.text).Code).toBe('MalformedXML');
      });

      it('invalid UTF-8 in the document is MalformedXML', async () => {
        const body = Buffer.concat([Buffer.from('<Delete><Object><Key>'), Buffer.from([0xff, 0xfe]), Buffer.from('</Key></Object></Delete>')]);
        const res = await raw(url, { method: 'POST', path: '/rawi?delete', headers: { 'content-md5': md5Base64(body) }, body });
        expect(errorFields(res.text).Code).toBe('MalformedXML');
      });

      it('a huge document is MalformedXML, with or without a declared length', async () => {
        const huge = deleteXml('a'.repeat(1000)).replace('<Delete>', '<Delete>' + ' '.repeat(1024 * 1024 + 10));
        const declared = await postDelete(huge);
        expect(errorFields(declared.text).Code).toBe('MalformedXML');
        const chunked = await postDelete(Readable.from([Buffer.from(huge)]), { 'content-md5': md5Base64(huge) });
        expect([chunked.status, errorFields(chunked.text).Code]).toEqual([400, 'MalformedXML']);
      });

      it('a well-formed document with namespaces, comments, CDATA and references is accepted', async () => {
        for (const k of ['a&b', 'c d', '<e>']) await raw(url, { method: 'PUT', path: `/rawi/${encodeURIComponent(k)}`, body: 'x' });
        const body =
          '<?xml version="1.0" encoding="UTF-8"?>\n<!-- c --><s3:Delete xmlns:s3="http://s3.amazonaws.com/doc/2006-03-01/">' +
          '<s3:Object><s3:Key>a&amp;b</s3:Key></s3:Object><Object><Key><![CDATA[c d]]></Key></Object><Object><Key>&#x3C;e&#62;</Key></Object></s3:Delete>';
        const res = await postDelete(body);
        expect(res.status).toBe(200);
        expect(res.text).toContain('<Deleted><Key>a&amp;b</Key></Deleted><Deleted><Key>c d</Key></Deleted><Deleted><Key>&lt;e&gt;</Key></Deleted>');
        for (const k of ['a&b', 'c d', '<e>']) expect((await raw(url, { method: 'HEAD', path: `/rawi/${encodeURIComponent(k)}` })).status).toBe(404);
      });

      it('CompleteMultipartUpload with malformed or oversized part lists is MalformedXML', async () => {
        const created = await raw(url, { method: 'POST', path: '/rawi/mpu?uploads' });
        const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(created.text)![1];
        const part = (n: string) => `<Part><PartNumber>${n}</PartNumber><ETag>"x"</ETag></Part>`;
        for (const body of [
          '<CompleteMultipartUpload></CompleteMultipartUpload>',
          `<CompleteMultipartUpload>${part('one')}</CompleteMultipartUpload>`,
          '<CompleteMultipartUpload><Part><PartNumber>1</PartNumber></Part></CompleteMultipartUpload>',
          `<CompleteMultipartUpload>${Array.from({ length: 10001 }, (_, i) => part(String(i + 1))).join('')}</CompleteMultipartUpload>`,
          '<Complete',
        ]) {
          const res = await raw(url, { method: 'POST', path: `/rawi/mpu?uploadId=${uploadId}`, body });
          expect([res.status, errorFields(res.text).Code]).toEqual([400, 'MalformedXML']);
        }
      });
    });

    describe('DeleteObjects digests', () => {
      const body = deleteXml('gone');
      it('needs Content-MD5 or a flexible checksum', async () => {
        expect(errorFields((await postDelete(body, {})).text).Code).toBe('InvalidRequest');
      });
      it('a wrong Content-MD5 or CRC is BadDigest', async () => {
        expect(errorFields((await postDelete(body, { 'content-md5': md5Base64('other') })).text).Code).toBe('BadDigest');
        expect(errorFields((await postDelete(body, { 'x-amz-checksum-crc32': crc32B64(Buffer.from('other')) })).text).Code).toBe('BadDigest');
      });
      it('a CRC32 instead of Content-MD5 is accepted (botocore >= 1.36, JS SDK)', async () => {
        const res = await postDelete(body, { 'x-amz-checksum-crc32': crc32B64(Buffer.from(body)), 'x-amz-sdk-checksum-algorithm': 'CRC32' });
        expect(res.status).toBe(200);
        expect(res.text).toContain('<Deleted><Key>gone</Key></Deleted>');
      });
      it('keys breaking the key rules get a per-key error, the others are deleted', async () => {
        await raw(url, { method: 'PUT', path: '/rawi/fine', body: 'x' });
        const res = await postDelete(deleteXml('fine', 'x'.repeat(1025), ''));
        expect(res.status).toBe(200);
        expect(res.text).toContain('<Deleted><Key>fine</Key></Deleted>');
        expect(res.text).toContain('<Error><Key></Key><Code>InvalidArgument</Code>');
        expect(res.text).toContain('<Code>KeyTooLongError</Code>');
        expect((await raw(url, { method: 'HEAD', path: '/rawi/fine' })).status).toBe(404);
      });
    });

    describe('hostile keys', () => {
      const put = (path: string, body = path) => raw(url, { method: 'PUT', path, body });

      it.each([
        ['a/../b', '/rawi/a%2F..%2Fb'],
        ['../escape', '/rawi/..%2Fescape'],
        ['x/..', '/rawi/x%2F..'],
        ['./dot', '/rawi/.%2Fdot'],
        ['/x//y//', '/rawi//x//y//'],
        ['%2F literal', '/rawi/%252F%20literal'],
        ['plus+and space', '/rawi/plus+and%20space'],
      ])('key %j round-trips exactly', async (key, path) => {
        expect((await put(path, key)).status).toBe(200);
        expect((await raw(url, { path })).text).toBe(key);
        const listed = await raw(url, { path: `/rawi?list-type=2&prefix=${encodeURIComponent(key)}` });
        expect(listed.text).toContain(`<Key>${key}</Key>`);
        expect(listed.text.match(/<Key>/g)?.length).toBe(1);
      });

      // A key with a plain `..` segment (as the SDK sends it) cannot arrive intact: workerd resolves
      // dot segments before the worker runs. The real gate refuses it: conformance-sigv4.test.ts.

      it.each([
        ['tab\there', '/rawi/tab%09here'],
        ['nl\nhere', '/rawi/nl%0Ahere'],
        ['cr\rhere', '/rawi/cr%0Dhere'],
        ['del\x7fhere', '/rawi/del%7Fhere'],
        ['c1\x85here', '/rawi/c1%C2%85here'],
      ])('key %j (a control character XML 1.0 carries) round-trips and lists exactly', async (key, path) => {
        expect((await put(path, key)).status).toBe(200);
        expect((await raw(url, { path })).text).toBe(key);
        const plain = await raw(url, { path: `/rawi?list-type=2&prefix=${encodeURIComponent(key)}` });
        expect(plain.text).toContain(`<Key>${key.replace('\r', '&#13;')}</Key>`);
        const encoded = await raw(url, { path: `/rawi?list-type=2&encoding-type=url&prefix=${encodeURIComponent(key)}` });
        expect(encoded.text).toContain(`<Key>${encodeURIComponent(key)}</Key>`);
      });

      it.each([
        ['%01', 'InvalidArgument'],
        ['a%00b', 'InvalidArgument'],
        ['vt%0B', 'InvalidArgument'],
        ['esc%1B', 'InvalidArgument'],
        ['%EF%BF%BF', 'InvalidArgument'],
        ['%EF%BF%BE', 'InvalidArgument'],
        ['%FF', 'InvalidURI'],
        ['%C0%AF', 'InvalidURI'],
        ['%ED%A0%80', 'InvalidURI'],
        ['%E2%82', 'InvalidURI'],
        ['%zz', 'InvalidURI'],
        ['%4', 'InvalidURI'],
      ])('key %s is refused with %s and stores nothing', async (rawKey, code) => {
        const res = await put(`/rawi/${rawKey}`);
        expect([res.status, errorFields(res.text).Code]).toEqual([400, code]);
        const get = await raw(url, { path: `/rawi/${rawKey}` });
        expect([get.status, errorFields(get.text).Code]).toEqual([400, code]);
      });

      it('a raw control byte in the request target is refused', async () => {
        const res = await rawSocket(url, `PUT /rawi/ctl\x01x HTTP/1.1\r\nHost: ${url.host}\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx`);
        expect([400, 0]).toContain(res.status);
        const listed = await raw(url, { path: '/rawi?list-type=2&prefix=ctl' });
        expect(listed.text).not.toContain('<Key>');
      });

      it('keys up to 1024 UTF-8 bytes are accepted, longer is KeyTooLongError', async () => {
        for (const key of ['k'.repeat(1024), '€'.repeat(341) + 'a']) {
          expect((await put(`/rawi/${encodeURIComponent(key)}`, 'ok')).status).toBe(200);
          expect((await raw(url, { path: `/rawi/${encodeURIComponent(key)}` })).text).toBe('ok');
        }
        for (const key of ['k'.repeat(1025), '€'.repeat(342)]) {
          const res = await put(`/rawi/${encodeURIComponent(key)}`, 'no');
          expect([res.status, errorFields(res.text).Code]).toEqual([400, 'KeyTooLongError']);
        }
      });

      it('a hostile copy source is refused the same way', async () => {
        for (const [source, code] of [
          ['rawi/%FF', 'InvalidURI'],
          ['rawi/a%01', 'InvalidArgument'],
          ['rawi', 'InvalidArgument'],
          ['rawi/k?versionId=3', 'InvalidArgument'],
        ]) {
          const res = await raw(url, { method: 'PUT', path: '/rawi/copy-target', headers: { 'x-amz-copy-source': source } });
          expect(errorFields(res.text).Code).toBe(code);
        }
      });
    });
  });
}

rawInputSuite('engine-anonymous');
