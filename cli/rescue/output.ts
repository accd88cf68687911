/**
 * Where a rescued object goes: `<out>/<bucket>/<key>`, the key's '/' making directories (layout
 * 'tree'), or `<out>/<bucket>/<key percent-encoded>` (layout 'flat', for keys a file system
 * cannot hold as paths). In a tree, '%' is written '%25' and the segments a path cannot have are
 * escaped: '' as '%', '.' as '%2E', '..' as '%2E%2E', so different keys never share a path;
 * a key that is also the folder of another key (`a` and `a/b`) cannot be both: the second fails
 * and the command says to use --layout flat.
 */
import { join } from 'node:path';

export type Layout = 'tree' | 'flat';

function segment(s: string): string {
  const escaped = s.replace(/%/g, '%25').replace(/\0/g, '%00');
  return escaped === '' ? '%' : escaped === '.' ? '%2E' : escaped === '..' ? '%2E%2E' : escaped;
}

export function outputPath(out: string, bucket: string, key: string, layout: Layout): string {
  if (layout === 'flat') return join(out, bucket, encodeURIComponent(key));
  return join(out, bucket, ...key.split('/').map(segment));
}
