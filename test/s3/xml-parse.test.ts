/** The strict request-XML parser: what it accepts, and that everything else is MalformedXML. */
import { describe, expect, it } from 'vitest';
import { S3Error } from '../../worker/model/errors.ts';
import { childText, childrenNamed, parseXml } from '../../worker/s3/xml-parse.ts';

describe('parseXml', () => {
  it('reads elements, text, references, CDATA; strips namespace prefixes; skips comments and PIs', () => {
    const root = parseXml(
      '\uFEFF<?xml version="1.0"?>\r\n<!-- x --><a:Delete xmlns:a="urn:x" b=\'1\'><a:Object><Key>x &amp; &#x41;&#66; <![CDATA[<raw>]]></Key></a:Object><?pi?><Quiet>true</Quiet><Empty/></a:Delete>',
    );
    expect(root.name).toBe('Delete');
    expect(childrenNamed(root, 'Object')).toHaveLength(1);
    expect(childText(childrenNamed(root, 'Object')[0], 'Key')).toBe('x & AB <raw>');
    expect(childText(root, 'Quiet')).toBe('true');
    expect(childText(root, 'Empty')).toBe('');
    expect(childText(root, 'Missing')).toBeUndefined();
  });

  it('keeps significant whitespace in text and normalises line ends', () => {
    expect(parseXml('<K>  a \r\n b  </K>').text).toBe('  a \n b  ');
  });

  it.each([
    '',
    '   ',
    'text',
    '<a>',
    '<a></b>',
    '<a><b></a></b>',
    '<a/><b/>',
    '<a>x</a>trailing',
    '<a x=1></a>',
    '<a x="1"y="2"></a>',
    '<a x="<"></a>',
    '<a>&unknown;</a>',
    '<a>&amp</a>',
    '<a>&#xD800;</a>',
    '<a>&#x110000;</a>',
    '<a>&#8;</a>',
    '<a>\u0001</a>',
    '<!DOCTYPE a><a/>',
    '<a><!DOCTYPE b></a>',
    '<a><!-- unterminated </a>',
    '<a><![CDATA[ unterminated </a>',
    '<1a/>',
    '<a>' + '<b>'.repeat(20) + '</b>'.repeat(20) + '</a>',
  ])('rejects %j as MalformedXML', (xml) => {
    let caught: unknown;
    try {
      parseXml(xml);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(S3Error);
    expect((caught as S3Error).code).toBe('MalformedXML');
  });

  it('rejects a repeated single-valued child', () => {
    expect(() => childText(parseXml('<a><K>1</K><K>2</K></a>'), 'K')).toThrow(S3Error);
  });

  it('handles a large flat document (10000 parts) quickly enough to be usable', () => {
    const xml = `<CompleteMultipartUpload>${'<Part><PartNumber>1</PartNumber><ETag>"x"</ETag></Part>'.repeat(10000)}</CompleteMultipartUpload>`;
    expect(childrenNamed(parseXml(xml), 'Part')).toHaveLength(10000);
  });
});
