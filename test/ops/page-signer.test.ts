/**
 * The status page signs its reads with the gate's own SigV4 steps (auth/sigv4.ts sigv4Steps),
 * embedded as source in its script: that source must run on its own, with nothing of the module
 * around it (as in the browser), and sign exactly as the gate verifies.
 */
import { describe, expect, it } from 'vitest';
import { sigv4Steps, signingKey } from '../../worker/auth/sigv4.ts';
import { PAGE_SCRIPT } from '../../worker/ops/page-script.ts';

describe('the status page signer', () => {
  it("is the gate's: its source, run alone, signs as the gate does", async () => {
    expect(PAGE_SCRIPT).toContain(String(sigv4Steps));
    expect(() => new Function(PAGE_SCRIPT)).not.toThrow(); // the whole script parses
    const alone = new Function('var __name = function (fn) { return fn; };\nreturn (' + String(sigv4Steps) + ')();')() as ReturnType<typeof sigv4Steps>;
    const gate = sigv4Steps();
    const canonical = (s: typeof gate) =>
      s.canonicalRequest(
        'GET',
        '/_shardgate/status',
        s.canonicalQuery([
          ['hours', '24'],
          ['a b', 'ü+'],
        ]),
        s.canonicalHeaders(['host', 'x-amz-date'], (n) => (n === 'host' ? 'gw.example' : '20260102T030405Z')),
        'host;x-amz-date',
        s.EMPTY_SHA256,
      );
    expect(canonical(alone)).toBe(canonical(gate));
    const scope = gate.credentialScope('20260102', 'eu-west-1', 's3');
    const pageKey = await alone.importSigningKey(await alone.deriveSigningKey('secret/key', '20260102', 'eu-west-1', 's3'));
    const pageSig = await alone.signature(pageKey, await alone.stringToSign('20260102T030405Z', scope, canonical(alone)));
    const gateSig = await gate.signature(
      await signingKey('secret/key', '20260102', 'eu-west-1', 's3'),
      await gate.stringToSign('20260102T030405Z', scope, canonical(gate)),
    );
    expect(pageSig).toMatch(/^[0-9a-f]{64}$/);
    expect(pageSig).toBe(gateSig);
  });
});
