/**
 * A test double of the transit secrets engine API of HashiCorp Vault / OpenBao: NOT Vault, a small
 * Node HTTP server answering the documented requests and JSON shapes the gateway's transit client
 * (worker/engine/transit-client.ts) uses, so that SSE-KMS with a transit-backed key can be tested
 * on a machine where neither Vault nor OpenBao can be installed:
 *   POST /v1/<mount>/encrypt/<key>    {"plaintext": b64}   -> {"data": {"ciphertext": "vault:vN:...", "key_version": N}}
 *   POST /v1/<mount>/decrypt/<key>    {"ciphertext": ...}  -> {"data": {"plaintext": b64}}
 *   POST /v1/<mount>/rewrap/<key>     {"ciphertext": ...}  -> {"data": {"ciphertext": "vault:vLATEST:...", "key_version": LATEST}}
 *   GET  /v1/<mount>/keys/<key>                            -> {"data": {name, type, keys, latest_version, min_decryption_version, supports_*...}}
 *   POST /v1/<mount>/keys/<key>                            creates an aes256-gcm96 key (204)
 *   POST /v1/<mount>/keys/<key>/rotate                     a new latest version
 * Every answer has Vault's envelope (request_id, lease_id, renewable, lease_duration, data,
 * wrap_info, warnings, auth); errors are {"errors": [...]} with Vault's status: 403 "permission
 * denied" for a wrong token (and for encrypt with a missing key: Vault's upsert needs `create`, which
 * the documented policy does not grant), 400 "encryption key not found" for decrypt or rewrap with a
 * missing key (404 on keys/<key>),
 * 400 "... disallowed by policy (too old)" for a ciphertext below min_decryption_version. The
 * ciphertext is Vault's format: "vault:v<N>:" + base64(96-bit nonce || AES-256-GCM ciphertext || tag).
 *
 * `mode` makes it misbehave: 'deny' (403 to everything), 'sealed' (503 "Vault is sealed"),
 * 'throttle' (429, a rate limit quota), 'refuse'
 * (the connection is dropped: an unreachable Vault), 'stall' (no answer until `release()`).
 * `calls` counts requests by operation (encrypt, decrypt, rewrap, keys, rotate).
 */
import { createCipheriv, createDecipheriv, randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

interface TransitKey {
  versions: Map<number, Buffer>;
  latest: number;
  minDecryptionVersion: number;
  created: Map<number, number>;
}

export type TransitMode = 'normal' | 'deny' | 'sealed' | 'throttle' | 'refuse' | 'stall';

export interface TransitDouble {
  /** http://127.0.0.1:<port> */
  address: string;
  mode: TransitMode;
  readonly calls: Record<string, number>;
  /** The X-Vault-Token and X-Vault-Namespace headers of every request, in order. */
  readonly seen: { token: string | undefined; namespace: string | undefined; path: string }[];
  createKey(name: string): void;
  rotate(name: string): void;
  deleteKey(name: string): void;
  setMinDecryptionVersion(name: string, version: number): void;
  latest(name: string): number;
  /** Answers the stalled requests (with what the current mode answers). */
  release(): void;
  close(): Promise<void>;
}

const envelope = (data: unknown) => ({
  request_id: randomUUID(),
  lease_id: '',
  renewable: false,
  lease_duration: 0,
  data,
  wrap_info: null,
  warnings: null,
  auth: null,
});

export async function startTransitServer(o: { token: string; mount?: string }): Promise<TransitDouble> {
  const mount = o.mount ?? 'transit';
  const keys = new Map<string, TransitKey>();
  const calls: Record<string, number> = {};
  const seen: TransitDouble['seen'] = [];
  let stalled: (() => void)[] = [];

  const encrypt = (k: TransitKey, version: number, plain: Buffer) => {
    const nonce = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', k.versions.get(version)!, nonce);
    const ct = Buffer.concat([c.update(plain), c.final(), c.getAuthTag()]);
    return `vault:v${version}:${Buffer.concat([nonce, ct]).toString('base64')}`;
  };
  /** The plaintext, or the error Vault answers with. */
  const decrypt = (k: TransitKey, ciphertext: unknown): Buffer | [number, string] => {
    const m = typeof ciphertext === 'string' ? /^vault:v(\d+):(.+)$/.exec(ciphertext) : null;
    if (!m) return [400, 'invalid ciphertext: no prefix'];
    const version = Number(m[1]);
    if (version < k.minDecryptionVersion) return [400, 'ciphertext or signature version is disallowed by policy (too old)'];
    const key = k.versions.get(version);
    if (!key) return [400, 'invalid ciphertext: key version not found'];
    const raw = Buffer.from(m[2]!, 'base64');
    try {
      const d = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
      d.setAuthTag(raw.subarray(raw.length - 16));
      return Buffer.concat([d.update(raw.subarray(12, raw.length - 16)), d.final()]);
    } catch {
      return [400, 'cipher: message authentication failed'];
    }
  };

  const answer = (res: ServerResponse, status: number, body?: unknown) => {
    res.writeHead(status, body === undefined ? {} : { 'Content-Type': 'application/json' });
    res.end(body === undefined ? undefined : JSON.stringify(body));
  };

  const handle = (req: IncomingMessage, res: ServerResponse, text: string) => {
    if (double.mode === 'refuse') {
      req.socket.destroy();
      return;
    }
    if (double.mode === 'stall') {
      stalled.push(() => handle(req, res, text));
      return;
    }
    if (double.mode === 'sealed') return answer(res, 503, { errors: ['Vault is sealed'] });
    if (double.mode === 'throttle') return answer(res, 429, { errors: ['request path "transit/decrypt": rate limit quota exceeded'] });
    if (double.mode === 'deny' || req.headers['x-vault-token'] !== o.token) return answer(res, 403, { errors: ['permission denied'] });
    const url = new URL(req.url ?? '/', 'http://double');
    const prefix = `/v1/${mount}/`;
    if (!url.pathname.startsWith(prefix)) return answer(res, 404, { errors: [`no handler for route "${url.pathname.slice(4)}". route entry not found.`] });
    const [op, rawName, extra] = url.pathname.slice(prefix.length).split('/');
    const name = decodeURIComponent(rawName ?? '');
    let body: Record<string, unknown> = {};
    try {
      body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    } catch {
      return answer(res, 400, { errors: ['failed to parse JSON input'] });
    }
    const k = keys.get(name);
    if (op === 'keys' && extra === 'rotate' && req.method === 'POST') {
      calls.rotate = (calls.rotate ?? 0) + 1;
      if (!k) return answer(res, 400, { errors: ['encryption key not found'] });
      double.rotate(name);
      return answer(res, 204);
    }
    if (op === 'keys' && req.method === 'GET') {
      calls.keys = (calls.keys ?? 0) + 1;
      if (!k) return answer(res, 404, { errors: [] });
      return answer(
        res,
        200,
        envelope({
          name,
          type: 'aes256-gcm96',
          keys: Object.fromEntries([...k.created].map(([v, t]) => [String(v), t])),
          latest_version: k.latest,
          min_decryption_version: k.minDecryptionVersion,
          min_encryption_version: 0,
          min_available_version: 0,
          deletion_allowed: false,
          derived: false,
          exportable: false,
          allow_plaintext_backup: false,
          supports_encryption: true,
          supports_decryption: true,
          supports_derivation: true,
          supports_signing: false,
        }),
      );
    }
    if (op === 'keys' && req.method === 'POST') {
      if (!k) double.createKey(name);
      return answer(res, 204);
    }
    if (req.method !== 'POST' || !['encrypt', 'decrypt', 'rewrap'].includes(op ?? '')) return answer(res, 405, { errors: ['unsupported operation'] });
    calls[op!] = (calls[op!] ?? 0) + 1;
    // Vault's encrypt creates a missing key when the token may `create` there (upsert); the policy the
    // docs give has only `update`, so Vault answers 403, as goldfish's users met (hashicorp: "permission denied").
    if (!k && op === 'encrypt') return answer(res, 403, { errors: ['permission denied'] });
    if (!k) return answer(res, 400, { errors: ['encryption key not found'] });
    if (op === 'encrypt') {
      const plain = typeof body.plaintext === 'string' ? Buffer.from(body.plaintext, 'base64') : null;
      if (!plain) return answer(res, 400, { errors: ['missing plaintext to encrypt'] });
      return answer(res, 200, envelope({ ciphertext: encrypt(k, k.latest, plain), key_version: k.latest }));
    }
    const plain = decrypt(k, body.ciphertext);
    if (!Buffer.isBuffer(plain)) return answer(res, plain[0], { errors: [plain[1]] });
    if (op === 'decrypt') return answer(res, 200, envelope({ plaintext: plain.toString('base64') }));
    return answer(res, 200, envelope({ ciphertext: encrypt(k, k.latest, plain), key_version: k.latest }));
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({
        token: req.headers['x-vault-token'] as string | undefined,
        namespace: req.headers['x-vault-namespace'] as string | undefined,
        path: req.url ?? '',
      });
      handle(req, res, Buffer.concat(chunks).toString('utf8'));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  const double: TransitDouble = {
    address: `http://127.0.0.1:${port}`,
    mode: 'normal',
    calls,
    seen,
    createKey(name) {
      keys.set(name, { versions: new Map([[1, randomBytes(32)]]), latest: 1, minDecryptionVersion: 1, created: new Map([[1, Math.floor(Date.now() / 1000)]]) });
    },
    rotate(name) {
      const k = keys.get(name)!;
      k.latest++;
      k.versions.set(k.latest, randomBytes(32));
      k.created.set(k.latest, Math.floor(Date.now() / 1000));
    },
    deleteKey(name) {
      keys.delete(name);
    },
    setMinDecryptionVersion(name, version) {
      keys.get(name)!.minDecryptionVersion = version;
    },
    latest: (name) => keys.get(name)!.latest,
    release() {
      const waiting = stalled;
      stalled = [];
      if (double.mode === 'stall') double.mode = 'normal';
      for (const go of waiting) go();
    },
    async close() {
      double.release();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return double;
}
