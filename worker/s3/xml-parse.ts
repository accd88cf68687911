/**
 * A small strict XML parser for S3 request documents (DeleteObjects, CompleteMultipartUpload,
 * CreateBucketConfiguration). Elements, attributes (checked, then ignored), character and the
 * five predefined entity references, CDATA, comments, processing instructions. No DTD at all
 * (`<!DOCTYPE` is rejected: no entity expansion). Namespace prefixes are stripped.
 * Anything malformed, too deep or too big is MalformedXML, never a crash.
 * Spec: XML 1.0 (fifth edition), the subset above.
 */
import { S3Error } from '../model/errors.ts';

export interface XmlElement {
  name: string;
  children: XmlElement[];
  text: string;
}

const MAX_DEPTH = 16;
const MAX_ELEMENTS = 100_000;
const NAME = /[A-Za-z_][A-Za-z0-9._:-]*/y;
// eslint-disable-next-line no-control-regex
const BAD_CHARS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/;

const malformed = (why: string) =>
  new S3Error('MalformedXML', `The XML you provided was not well-formed or did not validate against our published schema (${why}).`);

export function parseXml(input: string): XmlElement {
  const s = input.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n');
  if (BAD_CHARS.test(s)) throw malformed('invalid character');
  let i = 0;
  let count = 0;

  const startsWith = (t: string) => s.startsWith(t, i);
  const skipTo = (end: string) => {
    const at = s.indexOf(end, i);
    if (at < 0) throw malformed(`unterminated ${end}`);
    const inner = s.slice(i, at);
    i = at + end.length;
    return inner;
  };
  const skipSpace = () => {
    while (i < s.length && ' \t\n'.includes(s[i])) i++;
  };
  const name = () => {
    NAME.lastIndex = i;
    const m = NAME.exec(s);
    if (!m) throw malformed('expected a name');
    i += m[0].length;
    return m[0];
  };
  const skipMisc = () => {
    for (;;) {
      skipSpace();
      if (startsWith('<?')) skipTo('?>');
      else if (startsWith('<!--')) skipTo('-->');
      else if (startsWith('<!')) throw malformed('DTDs are not accepted');
      else return;
    }
  };
  const element = (depth: number): XmlElement => {
    if (depth > MAX_DEPTH || ++count > MAX_ELEMENTS) throw malformed('document too deep or too large');
    i++; // '<'
    const tag = name();
    const el: XmlElement = { name: tag.slice(tag.indexOf(':') + 1), children: [], text: '' };
    for (;;) {
      const before = i;
      skipSpace();
      if (startsWith('/>')) {
        i += 2;
        return el;
      }
      if (startsWith('>')) break;
      if (i === before) throw malformed('expected whitespace before an attribute');
      name();
      skipSpace();
      if (s[i++] !== '=') throw malformed('expected =');
      skipSpace();
      const quote = s[i++];
      if (quote !== '"' && quote !== "'") throw malformed('expected a quoted attribute value');
      const value = skipTo(quote);
      if (value.includes('<')) throw malformed('< in attribute value');
      decodeEntities(value);
    }
    i++; // '>'
    for (;;) {
      if (i >= s.length) throw malformed(`unclosed <${tag}>`);
      if (startsWith('</')) {
        i += 2;
        if (name() !== tag) throw malformed(`mismatched end tag for <${tag}>`);
        skipSpace();
        if (s[i++] !== '>') throw malformed('expected >');
        return el;
      }
      if (startsWith('<!--')) skipTo('-->');
      else if (startsWith('<![CDATA[')) {
        i += 9;
        el.text += skipTo(']]>');
      } else if (startsWith('<?')) skipTo('?>');
      else if (startsWith('<!')) throw malformed('unexpected declaration');
      else if (startsWith('<')) el.children.push(element(depth + 1));
      else {
        const end = s.indexOf('<', i);
        const raw = s.slice(i, end < 0 ? s.length : end);
        i += raw.length;
        el.text += decodeEntities(raw);
      }
    }
  };

  skipMisc();
  if (!startsWith('<')) throw malformed('no root element');
  const root = element(0);
  skipMisc();
  if (i !== s.length) throw malformed('content after the root element');
  return root;
}

const ENTITIES: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

function decodeEntities(raw: string): string {
  if (!raw.includes('&')) return raw;
  return raw.replace(/&([^;&]*)(;?)/g, (_, ref: string, semi: string) => {
    if (!semi) throw malformed('bare &');
    if (ref in ENTITIES) return ENTITIES[ref];
    const m = /^#(?:x([0-9a-fA-F]{1,6})|([0-9]{1,7}))$/.exec(ref);
    const cp = m ? parseInt(m[1] ?? m[2], m[1] ? 16 : 10) : -1;
    const valid = cp === 0x9 || cp === 0xa || cp === 0xd || (cp >= 0x20 && cp <= 0xd7ff) || (cp >= 0xe000 && cp <= 0xfffd) || (cp >= 0x10000 && cp <= 0x10ffff);
    if (!valid) throw malformed(`bad reference &${ref};`);
    return String.fromCodePoint(cp);
  });
}

/** Child elements named `name`. */
export function childrenNamed(el: XmlElement, name: string): XmlElement[] {
  return el.children.filter((c) => c.name === name);
}

/** Text of the one child named `name`; undefined when absent, MalformedXML when repeated. */
export function childText(el: XmlElement, name: string): string | undefined {
  const found = childrenNamed(el, name);
  if (found.length > 1) throw malformed(`<${name}> repeated in <${el.name}>`);
  return found[0]?.text;
}

export function expectRoot(el: XmlElement, name: string): XmlElement {
  if (el.name !== name) throw malformed(`expected <${name}>, got <${el.name}>`);
  return el;
}

export { malformed as malformedXml };
