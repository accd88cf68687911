/**
 * Whether each transit-backed KMS key's Vault answers as its keys need (issue 43: "the deployment
 * review checking it at start"): one `GET /v1/<mount>/keys/<key>` with the configured token per
 * key, which needs Vault reachable, the token allowed to read the key, the key there, and a key
 * that encrypts and decrypts. As the adoption source probe (adopt/source-probe.ts): the review
 * itself (config/deployment.ts) runs without I/O when the isolate builds its gateway; this probe
 * runs with the first status read (/_shardgate/status, `shardgate status`) and each cron run after
 * it, at most once per `everyMs` per isolate, and what it finds wrong joins the review's warnings
 * on the status page and in the log. The token is never part of what it reports.
 */
import { errorMessage } from '../model/error-message.ts';
import { TransitError, type TransitClient } from './transit-client.ts';
import { IsolateShared } from '../model/isolate-shared.ts';

export interface TransitProbeResult {
  /** The KMS key id. */
  id: string;
  /** mount/key at address */
  where: string;
  ok: boolean;
  /** "answers", or why not. */
  detail: string;
  at: number;
}

/** One probe of the transit key behind KMS key `id`. */
export async function probeTransitKey(id: string, client: TransitClient, now = Date.now()): Promise<TransitProbeResult> {
  const where = client.where;
  try {
    const info = await client.readKey();
    const lacks = [!info.supportsEncryption && 'encryption', !info.supportsDecryption && 'decryption'].filter(Boolean);
    if (lacks.length)
      return { id, where, ok: false, detail: `has a transit key of type ${info.type || '(unknown)'} that does not support ${lacks.join(' or ')}`, at: now };
    return { id, where, ok: true, detail: `answers (transit key ${info.name}, type ${info.type}, latest version ${info.latestVersion})`, at: now };
  } catch (err) {
    return { id, where, ok: false, detail: reasonOf(err), at: now };
  }
}

function reasonOf(err: unknown): string {
  if (!(err instanceof TransitError)) return `failed: ${errorMessage(err)}`;
  switch (err.kind) {
    case 'Denied':
      return `refuses the token (wrong, expired or without "read" on the key): ${err.message}`;
    case 'KeyMissing':
      return `has no such transit key: ${err.message}`;
    case 'Timeout':
      return `does not answer in time: ${err.message}`;
    default:
      return `is not reachable or not well: ${err.message}`;
  }
}

export class TransitProbe {
  /** The last probe's results, shared as settled values (model/isolate-shared.ts). */
  private readonly shared: IsolateShared<TransitProbeResult[]>;

  constructor(
    private readonly keys: ReadonlyMap<string, { client: TransitClient }>,
    private readonly o: { everyMs?: number; now?: () => number; log?: (fields: Record<string, unknown>, error: boolean) => void } = {},
  ) {
    const everyMs = this.o.everyMs ?? 300_000;
    this.shared = new IsolateShared({ freshMs: everyMs, staleMs: 2 * everyMs, waitMs: 2000, now: this.o.now });
  }

  /** Each key's last probe, probing again when the last is older than `everyMs` (default 5 min; a request asking while another probes gets the last results). */
  results(): Promise<TransitProbeResult[]> {
    const now = (this.o.now ?? Date.now)();
    return this.shared.get(() =>
      Promise.all(
        [...this.keys].map(async ([id, { client }]) => {
          const r = await probeTransitKey(id, client, now);
          this.o.log?.({ msg: 'transit probe', kmsKey: id, transit: r.where, ok: r.ok, detail: r.detail }, !r.ok);
          return r;
        }),
      ),
    );
  }

  /** The review's warnings: one per transit key that does not answer as it must. */
  async warnings(): Promise<string[]> {
    return (await this.results())
      .filter((r) => !r.ok)
      .map(
        (r) =>
          `the Vault/OpenBao transit key of KMS key "${r.id}" (${r.where}) ${r.detail}: writes and reads of objects under that key are refused (KMS.KMSInvalidStateException, or 503 while Vault does not answer).`,
      );
  }
}
