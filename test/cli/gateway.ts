/**
 * The gateway as `npm start` serves it, for the command-line client smoke tests: the repo's
 * wrangler.toml with its embedded config (six local R2 buckets as one 4+2 pool, the SQLite
 * Durable Object catalog, the development key) in workerd, behind the Node front
 * (dev/local-gateway.ts: it answers `Expect: 100-continue`, which awscli sends on every PUT), on a
 * random loopback port with a fresh state directory, so every run starts empty and runs cannot
 * see each other. File watching is off: other people edit the tree while tests run, and a reload
 * in the middle of an upload would fail it for no reason of ours. The local cron is off too: the
 * tests read what they wrote, nothing more.
 *
 * `GatewayObserver` is a second, independent view of the gateway (aws4fetch, SigV4) used to check
 * what a client really did: the ETag shows whether an upload went multipart and in how many
 * parts; a 404 shows that a delete really happened.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { AwsClient } from 'aws4fetch';
import { startLocalGateway } from '../../dev/local-gateway.ts';
import { unanswered } from '../support/wedged.ts';

/** The development access key embedded in wrangler.toml. */
export const DEV_CREDENTIALS = { accessKeyId: 'shardgate-dev', secretAccessKey: 'shardgate-dev-secret' };
export const DEV_REGION = 'us-east-1';

export interface RunningGateway {
  url: URL;
  dispose(): Promise<void>;
}

/** Starts the gateway with its state (R2 buckets, Durable Objects) under `stateDir/`. */
export async function startGateway(stateDir: string): Promise<RunningGateway> {
  mkdirSync(stateDir, { recursive: true });
  const gateway = await startLocalGateway({ port: 0, hosts: ['127.0.0.1'], stateDir: join(stateDir, 'wrangler-state'), cronSeconds: 0 });
  return { url: gateway.url, dispose: () => gateway.close() };
}

export class GatewayObserver {
  private readonly signer = new AwsClient({ ...DEV_CREDENTIALS, service: 's3', region: DEV_REGION, retries: 0 });

  constructor(private readonly url: URL) {}

  /** Status and ETag (quotes kept) of a HEAD on the object. */
  async headObject(bucket: string, key: string): Promise<{ status: number; etag: string | null }> {
    const res = await this.signer.fetch(this.objectUrl(bucket, key), { method: 'HEAD' });
    return { status: res.status, etag: res.headers.get('etag') };
  }

  /** A GET signed with SigV4 over every header given (aws4fetch signs Accept-Encoding, as
   *  aws-sdk-go v1 does); the body is read whole (decompressed if the response is gzip). */
  async getObject(bucket: string, key: string, headers: Record<string, string>): Promise<{ status: number; headers: Headers; body: Buffer }> {
    const res = await this.signer.fetch(this.objectUrl(bucket, key), { method: 'GET', headers });
    return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
  }

  /**
   * Undefined when the gateway answers a HEAD within `ms`, else why not. A wedged gateway would
   * otherwise cost every later test its whole timeout (each client retries for minutes): the
   * file's guard (clients.test.ts) fails them at once instead, saying so.
   */
  async unresponsive(ms: number): Promise<string | undefined> {
    return unanswered(new URL('/cli-liveness-probe', this.url), ms, ((url: URL, init: RequestInit) => this.signer.fetch(url, init)) as typeof fetch);
  }

  /** Status of a HEAD on the bucket (200 while it exists, 404 once removed). */
  async headBucket(bucket: string): Promise<number> {
    const res = await this.signer.fetch(new URL(`/${bucket}`, this.url), { method: 'HEAD' });
    return res.status;
  }

  private objectUrl(bucket: string, key: string): URL {
    return new URL(`/${bucket}/${key.split('/').map(encodeURIComponent).join('/')}`, this.url);
  }
}
