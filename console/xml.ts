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
