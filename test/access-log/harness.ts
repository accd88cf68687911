/**
 * The real front door in Node with server access logging on (worker/app/access-log.ts,
 * worker/upkeep/access-log.ts): createApp with the real gate, EcStore over memory parts and the
 * SQL catalog in process (its calls counted by method), requests through app.fetch with an
 * execution context whose waitUntil work the test can wait for. Requests are signed by the AWS
 * SDK (test/auth/mutation/bases.ts).
 */
import { createApp } from '../../worker/app/app.ts';
import { makeAuthenticate, type GateConfig } from '../../worker/app/auth-gate.ts';
import { AccessLogDelivery } from '../../worker/upkeep/access-log.ts';
import { ACCESS_KEY, SECRET } from '../auth/helpers/signers.ts';
import { sdk } from '../auth/mutation/bases.ts';
import { toRequest } from '../auth/mutation/wire.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { memoryEcStore, testS3Settings } from '../support/memory-store.ts';

export const REGION = 'us-east-1';

export function loggingApp(o: { rollMs?: number; logging?: boolean; credentials?: GateConfig['credentials'] } = {}) {
  const catalog = localCatalog();
  const parts = memoryEcStore(catalog, { maxObjectSize: 8 * 1024 * 1024, maxPartSize: 8 * 1024 * 1024 });
  const logs: Record<string, unknown>[] = [];
  const delivery = new AccessLogDelivery({ catalog, store: parts.store, rollMs: o.rollMs ?? 60_000, log: (l) => logs.push(l) });
  const authenticate = makeAuthenticate(
    { credentials: o.credentials ?? [{ accessKeyId: ACCESS_KEY, secretAccessKey: SECRET }], allowAnonymous: false, region: REGION },
    {},
  );
  const settings = testS3Settings({ maxObjectSize: 8 * 1024 * 1024, maxPartSize: 8 * 1024 * 1024 });
  const app = createApp({ store: parts.store, config: parts.store.config, authenticate, settings, ...(o.logging === false ? {} : { accessLog: delivery }) });
  const pending: Promise<unknown>[] = [];
  const ctx = { waitUntil: (p: Promise<unknown>) => void pending.push(p), passThroughOnException: () => {}, props: {} } as unknown as ExecutionContext;
  const send = async (request: Request): Promise<Response> => {
    const res = await app.fetch(request, {}, ctx);
    const body = await res.arrayBuffer(); // read to its end, as a client does; kept for the test
    return new Response(res.status === 204 || res.status === 304 || request.method === 'HEAD' ? null : body, { status: res.status, headers: res.headers });
  };
  /** Sends an SDK command as the test key (the SDK's own wire request, unsent by the SDK). */
  const command = async (c: unknown, as: { accessKeyId?: string; secret?: string } = {}) => send(toRequest(await sdk(c, as))!);
  /** Waits for every waitUntil so far (and what those started). */
  const settle = async () => {
    while (pending.length) await Promise.allSettled(pending.splice(0));
  };
  const calls = () => Object.fromEntries(catalog.namespace.calls);
  const totalCalls = () => [...catalog.namespace.calls.values()].reduce((a, b) => a + b, 0);
  return { ...parts, catalog, delivery, app, send, command, settle, calls, totalCalls, logs };
}

/** ceph/s3-tests' _parse_standard_log_record: '[' and ']' become '"', then Python's shlex.split (POSIX). */
export function suiteFields(record: string): string[] {
  const s = record.replace(/[[\]]/g, '"');
  const out: string[] = [];
  let cur: string | null = null;
  let i = 0;
  while (i < s.length) {
    const ch = s[i]!;
    if (/\s/.test(ch)) {
      if (cur !== null) out.push(cur);
      cur = null;
      i++;
    } else if (ch === '"') {
      cur ??= '';
      i++;
      while (i < s.length && s[i] !== '"') {
        if (s[i] === '\\' && (s[i + 1] === '"' || s[i + 1] === '\\')) i++;
        cur += s[i++];
      }
      if (i >= s.length) throw new Error('No closing quotation');
      i++;
    } else if (ch === "'") {
      cur ??= '';
      const end = s.indexOf("'", i + 1);
      if (end < 0) throw new Error('No closing quotation');
      cur += s.slice(i + 1, end);
      i = end + 1;
    } else if (ch === '\\') {
      cur = (cur ?? '') + (s[i + 1] ?? '');
      i += 2;
    } else {
      cur = (cur ?? '') + ch;
      i++;
    }
  }
  if (cur !== null) out.push(cur);
  return out;
}

export const FIELD_NAMES = [
  'BucketOwner',
  'BucketName',
  'RequestDateTime',
  'RemoteIP',
  'Requester',
  'RequestID',
  'Operation',
  'Key',
  'RequestURI',
  'HTTPStatus',
  'ErrorCode',
  'BytesSent',
  'ObjectSize',
  'TotalTime',
  'TurnAroundTime',
  'Referrer',
  'UserAgent',
  'VersionID',
  'HostID',
  'SigVersion',
  'CipherSuite',
  'AuthType',
  'HostHeader',
  'TLSVersion',
  'AccessPointARN',
  'ACLRequired',
] as const;

export function parseRecord(record: string): Record<(typeof FIELD_NAMES)[number], string> {
  const f = suiteFields(record);
  if (f.length !== 26) throw new Error(`${f.length} fields in ${record}`);
  return Object.fromEntries(FIELD_NAMES.map((n, i) => [n, f[i]!])) as Record<(typeof FIELD_NAMES)[number], string>;
}
