/**
 * Where the console is: the URL's fragment, `#/<view>?<params>` (bucket, prefix, key). The
 * fragment is never sent to the server and never holds a secret; reloads and the back button work.
 */
export type View = 'buckets' | 'objects' | 'object' | 'settings' | 'health';

export interface Place {
  view: View;
  bucket: string;
  prefix: string;
  key: string;
}

export function currentPlace(): Place {
  const m = /^#\/(\w+)(?:\?(.*))?$/.exec(location.hash);
  const view = (['buckets', 'objects', 'object', 'settings', 'health'] as const).find((v) => v === m?.[1]) ?? 'buckets';
  const q = new URLSearchParams(m?.[2] ?? '');
  return { view, bucket: q.get('bucket') ?? '', prefix: q.get('prefix') ?? '', key: q.get('key') ?? '' };
}

export function href(view: View, params: Partial<Omit<Place, 'view'>> = {}): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
  const s = q.toString();
  return `#/${view}${s ? `?${s}` : ''}`;
}

export function go(view: View, params: Partial<Omit<Place, 'view'>> = {}): void {
  location.hash = href(view, params);
}
