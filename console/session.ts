/**
 * Who is signed in: the key the user typed, held in this tab's memory (a module variable), and
 * what the gateway says that key may do (whoami). Only when the user ticks "remember" is the key
 * written to localStorage, and signing out removes it. Nothing else the console stores is secret.
 */
import { S3, type Credentials } from './s3.ts';

export interface Grant {
  buckets: string[];
  prefixes?: string[];
  actions: string[];
}

export interface Session {
  s3: S3;
  accessKeyId: string;
  admin: boolean;
  grants: Grant[];
}

const REMEMBERED = 'shardgate.console.key';

let current: Session | null = null;

export function session(): Session | null {
  return current;
}

export const config = {
  region: document.body.dataset.region || 'us-east-1',
  base: document.body.dataset.base || '/_shardgate/console',
};

/** Checks the key against the gateway (a signed whoami) and keeps it for this tab. */
export async function signIn(credentials: Credentials, remember: boolean): Promise<Session> {
  const s3 = new S3(credentials, config.region);
  const who = await s3.whoami(config.base);
  current = { s3, accessKeyId: who.accessKeyId, admin: who.admin, grants: who.grants };
  if (remember) localStorage.setItem(REMEMBERED, JSON.stringify(credentials));
  else localStorage.removeItem(REMEMBERED);
  return current;
}

export function signOut(): void {
  current = null;
  localStorage.removeItem(REMEMBERED);
}

export function rememberedKey(): Credentials | null {
  try {
    const v = JSON.parse(localStorage.getItem(REMEMBERED) ?? 'null') as Credentials | null;
    return v && typeof v.accessKeyId === 'string' && typeof v.secretAccessKey === 'string' ? v : null;
  } catch {
    return null;
  }
}

/** Where a key scoped to prefixes may start listing: one place per named bucket and prefix. */
export function startingPoints(s: Session): { bucket: string; prefix: string }[] {
  const out: { bucket: string; prefix: string }[] = [];
  for (const g of s.grants) {
    if (!g.actions.includes('list')) continue;
    for (const bucket of g.buckets) {
      if (/[*?]/.test(bucket)) continue;
      for (const prefix of g.prefixes?.length ? g.prefixes : ['']) out.push({ bucket, prefix });
    }
  }
  return out;
}
