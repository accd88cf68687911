/**
 * `node --import tsx dev/vault-transit-check.ts [KEY]`: the gateway's transit client
 * (worker/engine/transit-client.ts) against a real Vault or OpenBao, for whoever has one: the
 * tests run against a double of the documented API (test/support/transit-server.ts), and this is
 * how the two are compared. It reads VAULT_ADDR and VAULT_TOKEN (and VAULT_NAMESPACE,
 * TRANSIT_MOUNT, default "transit"), the key name from the argument (default "shardgate"), and
 * runs what the gateway does: read the key (the deployment review's probe), encrypt 32 random
 * bytes, decrypt them back, rewrap, decrypt the rewrapped ciphertext, and a decrypt with a wrong
 * token (which must be refused as "Denied"). It prints one line per step and exits 1 on a
 * mismatch. It never prints the token. With a dev server:
 *   vault server -dev -dev-root-token-id=root &
 *   VAULT_ADDR=http://127.0.0.1:8200 VAULT_TOKEN=root vault secrets enable transit
 *   VAULT_ADDR=http://127.0.0.1:8200 VAULT_TOKEN=root vault write -f transit/keys/shardgate
 *   VAULT_ADDR=http://127.0.0.1:8200 VAULT_TOKEN=root node --import tsx dev/vault-transit-check.ts
 */
import { pathToFileURL } from 'node:url';
import { TransitClient, TransitError, transitVersionOf } from '../worker/engine/index.ts';
import { errorMessage } from '../worker/model/error-message.ts';

/** Each step's line; whether every step did what the gateway needs. */
export async function checkTransit(o: {
  address: string;
  token: string;
  key: string;
  mount?: string;
  namespace?: string;
}): Promise<{ lines: string[]; ok: boolean }> {
  const settings = { address: o.address, mount: o.mount ?? 'transit', key: o.key, token: o.token, ...(o.namespace ? { namespace: o.namespace } : {}) };
  const client = new TransitClient(settings);
  const lines: string[] = [];
  let ok = true;
  const step = async (name: string, run: () => Promise<string>) => {
    try {
      lines.push(`ok    ${name}: ${await run()}`);
    } catch (err) {
      ok = false;
      lines.push(`FAIL  ${name}: ${errorMessage(err)}`);
    }
  };
  const plain = crypto.getRandomValues(new Uint8Array(32));
  let ciphertext = '';
  await step('read key', async () => {
    const info = await client.readKey();
    if (!info.supportsEncryption || !info.supportsDecryption) throw new Error(`key type ${info.type} does not encrypt and decrypt`);
    return `${info.name}, ${info.type}, latest version ${info.latestVersion}, min decryption version ${info.minDecryptionVersion}`;
  });
  await step('encrypt', async () => {
    ciphertext = await client.encrypt(plain);
    return `vault:v${transitVersionOf(ciphertext)}:... (${ciphertext.length} characters)`;
  });
  const same = (a: Uint8Array) => a.length === plain.length && a.every((b, i) => b === plain[i]);
  await step('decrypt', async () => {
    if (!same(await client.decrypt(ciphertext))) throw new Error('the plaintext differs');
    return 'the 32 bytes back';
  });
  await step('rewrap, decrypt', async () => {
    const rewrapped = await client.rewrap(ciphertext);
    if (!same(await client.decrypt(rewrapped))) throw new Error('the rewrapped plaintext differs');
    return `vault:v${transitVersionOf(rewrapped)}:..., the same 32 bytes`;
  });
  await step('a wrong token is refused', async () => {
    const wrong = new TransitClient({ ...settings, token: 'not-a-token' });
    try {
      await wrong.decrypt(ciphertext);
    } catch (err) {
      if (err instanceof TransitError && err.kind === 'Denied') return `Denied (${err.status})`;
      throw err;
    }
    throw new Error('a wrong token decrypted');
  });
  return { lines, ok };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const address = process.env.VAULT_ADDR;
  const token = process.env.VAULT_TOKEN;
  if (!address || !token) {
    process.stderr.write('set VAULT_ADDR and VAULT_TOKEN (see the header of dev/vault-transit-check.ts)\n');
    process.exit(2);
  }
  const { lines, ok } = await checkTransit({
    address,
    token,
    key: process.argv[2] ?? 'shardgate',
    mount: process.env.TRANSIT_MOUNT,
    namespace: process.env.VAULT_NAMESPACE,
  });
  process.stdout.write(`${lines.join('\n')}\n`);
  process.exit(ok ? 0 : 1);
}
