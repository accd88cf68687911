/**
 * A gateway in this process for the event notification tests: the real front door (createApp with
 * the real SigV4 gate), EcStore over memory parts, the product's catalog (local-catalog.ts) whose
 * instances read the `notifications` section from their env as deployed ones do, served over a
 * real HTTP socket so the AWS SDK talks to it unchanged; and a real HTTP server as the webhook
 * receiver, which records every POST (headers and body) and can be told to fail or to hang.
 * Alarms are not fired here (sqlite-storage.ts): `deliver(now)` runs every instance's delivery
 * with the test's clock, as the alarm would.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdmin } from '../../worker/app/admin.ts';
import { createApp } from '../../worker/app/app.ts';
import { makeAuthenticate, makePostFormGate } from '../../worker/app/auth-gate.ts';
import { ACCESS_KEY, SECRET } from '../auth/helpers/signers.ts';
import type { Backend } from '../../backends/index.ts';
import { localCatalog, LocalCatalogNamespace } from './local-catalog.ts';
import { memoryEcStore, testS3Settings } from './memory-store.ts';
import { oneAttemptS3Client } from './s3-connections.ts';

const MiB = 1024 * 1024;
export const HOOK_SECRET = 'webhook-signing-secret';

export interface Received {
  headers: Record<string, string>;
  body: string;
  /** The parsed body. */
  json: { Records?: EventRecord[]; Event?: string; Bucket?: string };
}

export interface EventRecord {
  eventVersion: string;
  eventSource: string;
  awsRegion: string;
  eventTime: string;
  eventName: string;
  userIdentity: { principalId: string };
  requestParameters: { sourceIPAddress: string };
  s3: {
    s3SchemaVersion: string;
    configurationId: string;
    bucket: { name: string; arn: string };
    object: { key: string; size?: number; eTag?: string; versionId?: string; sequencer: string };
  };
}

/**
 * A webhook endpoint: 'ok' answers 200, 'fail' 503, 'hang' never answers (until closed): it got
 * the event, but the gateway never learns so. `failRate`: in 'ok' mode, that share of requests
 * answer 503 instead (drawn from `random`).
 */
export class WebhookReceiver {
  readonly received: Received[] = [];
  mode: 'ok' | 'fail' | 'hang' = 'ok';
  failRate = 0;
  random: () => number = Math.random;
  /** Called when a request arrived (after its body was read), whatever the mode. */
  onRequest: (() => void) | undefined;
  private readonly hung: ServerResponse[] = [];
  private server!: Server;
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/events`;
    return this;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = Buffer.concat(await req.toArray()).toString('utf8');
    const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
    const fails = this.mode === 'fail' || (this.mode === 'ok' && this.failRate > 0 && this.random() < this.failRate);
    if (!fails) this.received.push({ headers, body, json: JSON.parse(body) });
    this.onRequest?.();
    if (this.mode === 'hang') {
      this.hung.push(res);
      return;
    }
    res.writeHead(fails ? 503 : 200).end();
  }

  /** The object events received (the s3:TestEvent messages left out). */
  records(): EventRecord[] {
    return this.received.flatMap((r) => r.json.Records ?? []);
  }

  async close(): Promise<void> {
    for (const r of this.hung) r.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Serves `fetch` on a loopback port. */
async function serve(fetch: (r: Request) => Promise<Response>): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer(async (req, res) => {
    const body = Buffer.concat(await req.toArray());
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
    const request = new Request(`http://${req.headers.host}${req.url}`, {
      method: req.method,
      headers,
      ...(req.method === 'GET' || req.method === 'HEAD' ? {} : { body }),
    });
    const response = await fetch(request);
    const out = Buffer.from(await response.arrayBuffer());
    res.writeHead(response.status, Object.fromEntries(response.headers));
    res.end(req.method === 'HEAD' ? undefined : out);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * The gateway with destination `hook` (the receiver, signed with HOOK_SECRET; `hook` adds to its
 * settings) and `q` (a Queue binding that records its batches), plus `notifications` settings.
 */
export async function eventGateway(notifications: Record<string, unknown> = {}, hook: Record<string, unknown> = {}, backends?: Backend[]) {
  const receiver = await new WebhookReceiver().start();
  const queued: unknown[] = [];
  const queue = {
    async send(body: unknown) {
      queued.push(structuredClone(body));
    },
    async sendBatch(messages: { body: unknown }[]) {
      for (const m of messages) queued.push(structuredClone(m.body));
    },
  };
  const config = {
    notifications: {
      destinations: { hook: { webhook: receiver.url, secret: 'HOOK_SECRET', ...hook }, q: { queue: 'EVENTS' } },
      ...notifications,
    },
  };
  const namespace = new LocalCatalogNamespace({ SHARDGATE_CONFIG: JSON.stringify(config), HOOK_SECRET, EVENTS: queue });
  const catalog = localCatalog({}, namespace);
  const parts = memoryEcStore(catalog, { maxObjectSize: 8 * MiB, maxPartSize: 8 * MiB, ...(backends ? { backends } : {}) });
  const store = parts.store;
  const credentials = [{ accessKeyId: ACCESS_KEY, secretAccessKey: SECRET }];
  const authenticate = makeAuthenticate({ credentials, allowAnonymous: false, region: 'us-east-1' }, {});
  const postForm = makePostFormGate({ credentials, allowAnonymous: false, region: 'us-east-1' }, {});
  const settings = testS3Settings({ maxObjectSize: 8 * MiB, maxPartSize: 8 * MiB });
  const admin = createAdmin({
    authenticate,
    catalog,
    backends: parts.backends,
    region: 'us-east-1',
    scrub: { mode: 'heads', unitsPerRun: 10 },
    enqueueRepair: () => {},
    repair: async () => {},
  });
  const app = createApp({ store, config: store.config, authenticate, postForm, settings, admin });
  const front = await serve(async (r) => app.fetch(r));
  const client = oneAttemptS3Client(front.url, { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET });
  /** Every instance's delivery at `now`, until nothing more is due at `now` (or `rounds` runs). */
  const deliver = async (now: number, options: { signal?: AbortSignal; rounds?: number } = {}) => {
    for (let round = 0; round < (options.rounds ?? 50); round++) {
      const next = await Promise.all([...namespace.instances.values()].map((i) => i.object.deliverEvents(now, options)));
      if (!next.some((at) => at !== null && at <= now)) return;
    }
  };
  return {
    receiver,
    queued,
    /** The front door's origin (S3 and /_shardgate/admin). */
    endpoint: front.url,
    namespace,
    catalog,
    store,
    backends: parts.backends,
    client,
    deliver,
    async close() {
      client.destroy();
      await front.close();
      await receiver.close();
    },
  };
}
