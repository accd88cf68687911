/**
 * A client of the transit secrets engine of HashiCorp Vault or OpenBao (the same HTTP API): the
 * external key service a named KMS key may be backed by (engine/kms-keys.ts, docs/OPERATING.md
 * "KMS keys in Vault or OpenBao"). Four calls, as Vault's API documents them:
 *   POST {address}/v1/{mount}/encrypt/{key}  {"plaintext": base64}    -> data.ciphertext "vault:vN:..."
 *   POST {address}/v1/{mount}/decrypt/{key}  {"ciphertext": "vault:vN:..."} -> data.plaintext base64
 *   POST {address}/v1/{mount}/rewrap/{key}   {"ciphertext": ...}      -> data.ciphertext under the latest version
 *   GET  {address}/v1/{mount}/keys/{key}                              -> data: type, latest_version, supports_*
 * with the token in X-Vault-Token and the namespace, when one is set, in X-Vault-Namespace. Vault
 * answers errors as {"errors": [...]} with the HTTP status.
 *
 * Every call is bounded like a backend's (backends/deadline.ts): `bound` gives how long it may
 * wait (the request's deadline, model/request-deadline.ts) and a signal that ends it earlier. The
 * token goes into the header and nowhere else: no error message, log line or status text built
 * here or from a TransitError carries it.
 */
import { fromBase64, toBase64 } from '../model/bytes.ts';

export interface TransitSettings {
  /** https://vault.example:8200 (no trailing slash needed). */
  address: string;
  /** Where the transit engine is mounted ("transit"). */
  mount: string;
  /** The transit key's name. */
  key: string;
  token: string;
  /** Vault Enterprise / OpenBao namespace (X-Vault-Namespace). */
  namespace?: string;
}

/**
 * Why a call failed, in the words the gateway answers by:
 * - Denied: Vault refused (403: the token lacks the policy, or is expired or revoked; 400 for a
 *   ciphertext whose version the key no longer decrypts, or a key that does not do it);
 * - KeyMissing: no such transit key (deleted, or never made);
 * - Unavailable: no answer, a 5xx (Vault sealed or in standby trouble), or an answer that is not Vault's;
 * - Throttled: 429;
 * - Timeout: no answer within the bound.
 */
export type TransitFailure = 'Denied' | 'KeyMissing' | 'Unavailable' | 'Throttled' | 'Timeout';

export class TransitError extends Error {
  override readonly name = 'TransitError';
  constructor(
    readonly kind: TransitFailure,
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/** What GET keys/{key} tells (the fields the deployment review checks). */
export interface TransitKeyInfo {
  name: string;
  type: string;
  latestVersion: number;
  minDecryptionVersion: number;
  supportsEncryption: boolean;
  supportsDecryption: boolean;
}

/** How long a call may wait and a signal that ends it earlier (backends/deadline.ts WaitBound). */
export type TransitBound = () => { ms: number; signal?: AbortSignal };

/** The key version a `vault:vN:...` ciphertext is under; null when it is not one. */
export function transitVersionOf(ciphertext: string): number | null {
  const m = /^vault:v(\d+):/.exec(ciphertext);
  return m ? Number(m[1]) : null;
}

export class TransitClient {
  constructor(
    readonly settings: TransitSettings,
    private readonly bound: TransitBound = () => ({ ms: 10_000 }),
    private readonly fetcher: typeof fetch = (input, init) => fetch(input, init),
  ) {}

  /** Where this client's key is, for messages: mount, key, address and namespace (never the token). */
  get where(): string {
    const s = this.settings;
    return `${s.mount}/${s.key} at ${s.address.replace(/\/+$/, '')}${s.namespace ? ` (namespace ${s.namespace})` : ''}`;
  }

  /** `plain` encrypted under the key's latest version: "vault:vN:...". */
  async encrypt(plain: Uint8Array): Promise<string> {
    const data = await this.call('POST', `encrypt/${this.keyPath()}`, { plaintext: toBase64(plain) });
    return this.ciphertextOf(data, 'encrypt');
  }

  async decrypt(ciphertext: string): Promise<Uint8Array> {
    const data = await this.call('POST', `decrypt/${this.keyPath()}`, { ciphertext });
    const plain = typeof data.plaintext === 'string' ? fromBase64(data.plaintext) : null;
    if (!plain) throw new TransitError('Unavailable', `the transit decrypt answer of ${this.where} has no base64 plaintext`);
    return plain;
  }

  /** `ciphertext` re-encrypted under the key's latest version (Vault never returns the plaintext). */
  async rewrap(ciphertext: string): Promise<string> {
    const data = await this.call('POST', `rewrap/${this.keyPath()}`, { ciphertext });
    return this.ciphertextOf(data, 'rewrap');
  }

  async readKey(): Promise<TransitKeyInfo> {
    const d = await this.call('GET', `keys/${this.keyPath()}`);
    return {
      name: String(d.name ?? this.settings.key),
      type: String(d.type ?? ''),
      latestVersion: Number(d.latest_version ?? 0),
      minDecryptionVersion: Number(d.min_decryption_version ?? 0),
      supportsEncryption: d.supports_encryption === true,
      supportsDecryption: d.supports_decryption === true,
    };
  }

  private keyPath(): string {
    return encodeURIComponent(this.settings.key);
  }

  private ciphertextOf(data: Record<string, unknown>, op: string): string {
    const ct = data.ciphertext;
    if (typeof ct !== 'string' || transitVersionOf(ct) === null)
      throw new TransitError('Unavailable', `the transit ${op} answer of ${this.where} has no vault:vN: ciphertext`);
    return ct;
  }

  /** One call: its answer's `data`, or a TransitError of the kind its status says. */
  private async call(method: 'GET' | 'POST', path: string, body?: unknown): Promise<Record<string, unknown>> {
    const s = this.settings;
    const url = `${s.address.replace(/\/+$/, '')}/v1/${s.mount.replace(/^\/+|\/+$/g, '')}/${path}`;
    const headers: Record<string, string> = { 'X-Vault-Token': s.token, 'X-Vault-Request': 'true' };
    if (s.namespace) headers['X-Vault-Namespace'] = s.namespace;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const { ms, signal: outer } = this.bound();
    const op = path.slice(0, path.indexOf('/'));
    if (ms <= 0) throw new TransitError('Timeout', `the transit ${op} of ${this.where} had no time left before the request's deadline`);
    // The bound, the caller's signal: whichever ends first aborts the call.
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(new TransitError('Timeout', `the transit ${op} of ${this.where} did not answer within ${ms} ms`)), ms);
    const onOuter = () => abort.abort(new TransitError('Timeout', `the transit ${op} of ${this.where} was cut off by the request's deadline`));
    if (outer?.aborted) onOuter();
    else outer?.addEventListener('abort', onOuter, { once: true });
    try {
      const res = await this.fetcher(url, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}), signal: abort.signal });
      const text = await res.text();
      const json = parseAnswer(text);
      if (res.ok) {
        if (!json?.data || typeof json.data !== 'object')
          throw new TransitError('Unavailable', `the transit ${op} answer of ${this.where} is not Vault's (no "data")`);
        return json.data;
      }
      throw failure(res.status, Array.isArray(json?.errors) ? json.errors.map(String).join('; ') : text.slice(0, 200), `transit ${op} of ${this.where}`);
    } catch (err) {
      if (err instanceof TransitError) throw err;
      if (abort.signal.aborted && abort.signal.reason instanceof TransitError) throw abort.signal.reason;
      // A refused connection, a reset, a DNS failure, a TLS failure: Vault is not reachable.
      throw new TransitError('Unavailable', `the transit ${op} of ${this.where} failed: ${(err as Error)?.message ?? String(err)}`);
    } finally {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onOuter);
    }
  }
}

/** Vault's JSON answer, or null when the body is not JSON (a proxy's page, an empty body). */
function parseAnswer(text: string): { data?: Record<string, unknown>; errors?: unknown[] } | null {
  try {
    return text ? (JSON.parse(text) as { data?: Record<string, unknown>; errors?: unknown[] }) : null;
  } catch {
    return null;
  }
}

/** A Vault error answer as a TransitError (the message is Vault's `errors`, which never echo the token). */
function failure(status: number, errors: string, what: string): TransitError {
  const said = `${what} answered ${status}${errors ? `: ${errors}` : ''}`;
  if (status === 429) return new TransitError('Throttled', said, status);
  // Some Vault versions answer a ciphertext that fails its tag with 500 (hashicorp/vault#10842): a refusal, not an outage.
  if (/message authentication failed/i.test(errors)) return new TransitError('Denied', said, status);
  if (status >= 500) return new TransitError('Unavailable', said, status);
  if (status === 403 || status === 401) return new TransitError('Denied', said, status);
  if (status === 404 || /not found|no existing key/i.test(errors)) return new TransitError('KeyMissing', said, status);
  // 400 for a key that is there: a version below min_decryption_version, a key type that does not encrypt, a bad ciphertext.
  return new TransitError('Denied', said, status);
}
