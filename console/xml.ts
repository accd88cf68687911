/** Reading S3's XML answers (DOMParser; S3's default namespace leaves local names as they are). */
export function parseXml(text: string): XMLDocument {
  return new DOMParser().parseFromString(text, 'application/xml');
}

/** The text of the first element named `name` anywhere in `doc`. */
export function textOf(doc: Document | Element, name: string): string | undefined {
  return doc.getElementsByTagName(name)[0]?.textContent ?? undefined;
}

/** Direct children named `names[0]`, or the children named `names[1]` of those (Buckets > Bucket). */
export function childrenNamed(el: Element, ...names: string[]): Element[] {
  let level = [el];
  for (const name of names) level = level.flatMap((e) => Array.from(e.children).filter((c) => c.localName === name));
  return level;
}

/** The text of `el`'s direct child `name`, or ''. */
export function childText(el: Element, name: string): string {
  return Array.from(el.children).find((c) => c.localName === name)?.textContent ?? '';
}

/** The error DOMParser reports for a document that is not well-formed XML, or null. */
export function xmlProblem(text: string): string | null {
  const doc = parseXml(text);
  const err = doc.getElementsByTagName('parsererror')[0];
  return err ? (err.textContent ?? 'not well-formed XML').split('\n')[0]! : null;
}

/** `text` indented one element a line (leaf elements keep their text on their line), for editing; text that is not XML is returned as it is. */
export function prettyXml(text: string): string {
  if (xmlProblem(text)) return text;
  const doc = parseXml(text);
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const lines: string[] = [];
  const walk = (el: Element, depth: number, root: boolean) => {
    const pad = '  '.repeat(depth);
    const attrs = [...el.attributes].filter((a) => !(root === false && a.name === 'xmlns')).map((a) => ` ${a.name}="${esc(a.value).replace(/"/g, '&quot;')}"`);
    const open = `${el.tagName}${attrs.join('')}`;
    const children = [...el.children];
    if (children.length === 0) lines.push(`${pad}<${open}>${esc(el.textContent ?? '')}</${el.tagName}>`);
    else {
      lines.push(`${pad}<${open}>`);
      for (const c of children) walk(c, depth + 1, false);
      lines.push(`${pad}</${el.tagName}>`);
    }
  };
  walk(doc.documentElement, 0, true);
  return `<?xml version="1.0" encoding="UTF-8"?>\n${lines.join('\n')}\n`;
}
