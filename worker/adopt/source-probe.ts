/**
 * Whether each bucket's source answers (issue 41: "wrong source credentials or an unreachable
 * endpoint: the deployment review says so at start"): one ListObjectsV2 of one key per source,
 * which needs the endpoint reachable, the bucket there and the credentials allowed to list it (as
 * the backfill and the merged listings need). The deployment review itself (config/deployment.ts)
 * runs without I/O when the isolate builds its gateway; this probe runs with the first status
 * read (/_shardgate/status, `shardgate status`) and with each cron run after it, at most once per
 * `everyMs` per isolate, and what it finds wrong joins the review's warnings on the status page and
 * in the log. A detached source is not probed (it is never read again).
 */
import { BackendError } from '../../backends/types.ts';
import { errorMessage } from '../model/error-message.ts';
import type { SourceClient } from './source-client.ts';
import { IsolateShared } from '../model/isolate-shared.ts';

export interface SourceProbeResult {
  bucket: string;
  /** endpoint/bucket */
  source: string;
  ok: boolean;
  /** What was found: "answers", or why not (credentials refused, no such bucket, unreachable). */
  detail: string;
  at: number;
}

/** One probe of `client` (a LIST of one key). */
export async function probeSource(bucket: string, client: SourceClient, now = Date.now()): Promise<SourceProbeResult> {
  const source = `${client.settings.endpoint}/${client.settings.bucket}`;
  try {
    await client.list({ prefix: '', delimiter: null, startAfter: null, continuationToken: null, maxKeys: 1 });
    return { bucket, source, ok: true, detail: 'answers (listed with the configured credentials)', at: now };
  } catch (err) {
    return { bucket, source, ok: false, detail: reasonOf(err), at: now };
  }
}

/** A probe failure in the operator's words. */
function reasonOf(err: unknown): string {
  const message = errorMessage(err);
  if (!(err instanceof BackendError)) return `failed: ${message}`;
  if (/\b(403|AccessDenied|InvalidAccessKeyId|SignatureDoesNotMatch)\b/.test(message)) return `refuses the credentials: ${message}`;
  if (/\b(404|NoSuchBucket)\b/.test(message)) return `has no such bucket: ${message}`;
  if (err.kind === 'Timeout') return `does not answer in time: ${message}`;
  return `is not reachable: ${message}`;
}

export class SourceProbe {
  /** The last probe's results, shared as settled values (model/isolate-shared.ts). */
  private readonly shared: IsolateShared<SourceProbeResult[]>;

  constructor(
    private readonly sources: ReadonlyMap<string, SourceClient>,
    private readonly o: {
      everyMs?: number;
      now?: () => number;
      /** A source detached: not probed. */
      detached?: (bucket: string) => Promise<boolean>;
      log?: (fields: Record<string, unknown>, error: boolean) => void;
    } = {},
  ) {
    const everyMs = this.o.everyMs ?? 300_000;
    this.shared = new IsolateShared({ freshMs: everyMs, staleMs: 2 * everyMs, waitMs: 2000, now: this.o.now });
  }

  /** Each source's last probe, probing again when the last is older than `everyMs` (default 5 min; a request asking while another probes gets the last results). */
  results(): Promise<SourceProbeResult[]> {
    const now = (this.o.now ?? Date.now)();
    return this.shared.get(() =>
      Promise.all(
        [...this.sources].map(async ([bucket, client]) => {
          if (await this.o.detached?.(bucket).catch(() => false)) return null;
          const r = await probeSource(bucket, client, now);
          this.o.log?.({ msg: 'source probe', bucket, source: r.source, ok: r.ok, detail: r.detail }, !r.ok);
          return r;
        }),
      ).then((all) => all.filter((r): r is SourceProbeResult => r !== null)),
    );
  }

  /** The review's warnings: one per source that does not answer. */
  async warnings(): Promise<string[]> {
    return (await this.results())
      .filter((r) => !r.ok)
      .map(
        (r) => `the source of bucket "${r.bucket}" (${r.source}) ${r.detail}: reads of objects not yet adopted answer 503 SlowDown, and the backfill waits.`,
      );
  }
}
