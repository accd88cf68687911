/**
 * The tests' S3 clients that make one attempt per request, path-style in us-east-1, over
 * keep-alive connections that the client closes once idle 4 s.
 *
 * Why: workerd closes a connection idle for 5 s (kj's HTTP pipeline timeout; a Node server by
 * default too, though the local front keeps 65 s), and a request sent on it then gets "socket hang up". The
 * SDK's own retries (3 attempts by default) hide that from users; these clients make one attempt,
 * so that every error a test meets is the gateway's, and the operator drill failed once on it
 * (2026-12-07, step 4, after seconds of CLI commands). Measured against a Worker in workerd:
 * requests sent 4.98-5.02 s after the last on the same connection, 51 of 200 "socket hang up" with
 * the SDK's default agent, 0 of 200 with this one. Node's agent re-arms a pooled socket's
 * `timeout` each time it is freed and closes it when that fires; the SDK clears the timeout on a
 * socket while a request of its own is on it (no requestTimeout), so requests are not cut short.
 */
import { S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { Agent } from 'node:http';

/** Shorter than workerd's and Node's 5 s, with room for a busy event loop. */
export const IDLE_CONNECTION_MS = 4_000;

/** A client of `endpoint` signing with a copy of `credentials` (the SDK annotates the object it is given); `extra` goes over the rest. */
export function oneAttemptS3Client(
  endpoint: string,
  credentials: { accessKeyId: string; secretAccessKey: string },
  extra: Partial<S3ClientConfig> = {},
): S3Client {
  return new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { ...credentials },
    maxAttempts: 1,
    // The SDK builds its Node handler from these options.
    requestHandler: { httpAgent: new Agent({ keepAlive: true, timeout: IDLE_CONNECTION_MS }) },
    ...extra,
  } as S3ClientConfig);
}
