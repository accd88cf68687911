/**
 * Property test of the gate (issue 11, "make it hold"): every base request (mutation/bases.ts:
 * header, presigned SigV4, SigV2, aws-chunked with signed chunks and trailers, made by the SDKs
 * and independent signers) is mutated one element at a time (mutation/mutations.ts) and signed
 * again for the wrong region, time or key, and each variant goes through the real app and gate in
 * Node (test/support/gate-app.ts). For every variant, one of:
 * - it asks for exactly what was signed (mutation/wire.ts `fingerprint`): any answer will do;
 * - it is refused (4xx) by the gate, or, for a signed body, by the body's verification, and the
 *   store (buckets, objects, uploads, parts) is exactly as before.
 * Never a 500. The mutations' random choices are seeded (SHARDGATE_MUTATION_SEED overrides the
 * seed; requests are signed at the current time): a failure names its seed, base request and
 * mutation, and replays.
 */
import { describe, expect, it } from 'vitest';
import { prng } from '../support/random.ts';
import { snapshotStore as snapshot } from './helpers/store-snapshot.ts';
import { gateApp } from '../support/gate-app.ts';
import { BUCKET, baseCases, type BaseCase, type SignAs } from './mutation/bases.ts';
import { mutations, type Mutation } from './mutation/mutations.ts';
import { fingerprint, signedHeaderNames, toRequest, type Wire } from './mutation/wire.ts';

const SEED = Number(process.env.SHARDGATE_MUTATION_SEED ?? 20261201);

/** Signed again so that the gate must refuse it (SigV2 has no region). */
const RESIGNED: Array<[string, SignAs]> = [
  ['region eu-west-1', { region: 'eu-west-1' }],
  ['signed two days ago', { skewMs: -2 * 86400e3 }],
  ['unknown access key', { accessKeyId: 'AKIDNOBODY' }],
  ['wrong secret', { secret: 'not the secret' }],
];

/** Codes of a signed body that failed its verification while being read. */
const BODY_CODES = new Set(['XAmzContentSHA256Mismatch', 'SignatureDoesNotMatch', 'IncompleteBody', 'InvalidRequest', 'MalformedTrailerError', 'BadDigest']);

/** A fresh gateway with a bucket, two objects and an open multipart upload; `trace.gatePassed`
 *  says whether the gate let the last request through. */
async function freshGateway() {
  const trace = { gatePassed: false };
  const g = gateApp((gate) => async (request, view) => {
    const result = await gate(request, view);
    trace.gatePassed = true;
    return result;
  });
  await g.store.createBucket(BUCKET, { region: 'us-east-1' });
  for (const [key, text] of [
    ['obj', 'object body'],
    ['dir/obj.txt', 'nested object'],
  ]) {
    const body = new Response(text).body!;
    await g.store.putObject(BUCKET, key, body, { contentLength: text.length, contentMD5: null, metadata: { user: {} }, checksum: null, conditions: {} });
  }
  const { uploadId } = await g.store.createMultipartUpload(BUCKET, 'mpu', { metadata: { user: {} }, checksum: null });
  return { ...g, trace, uploadId };
}

interface Tally {
  failures: string[];
  cases: number;
  different: number;
  sameRequest: number;
  unsendable: number;
  codes: Map<string, number>;
}

async function run(index: number, tally: Tally): Promise<void> {
  const g = await freshGateway();
  const base: BaseCase = baseCases({ uploadId: g.uploadId })[index];
  const seedOf = `seed ${SEED}, base ${index} (${base.name})`;
  const original = await base.sign({});
  const signed = signedHeaderNames(original, base.scheme);
  const originalRequest = toRequest(original)!;
  const originalFingerprint = fingerprint(originalRequest, original.body, base.scheme, signed);

  const send = async (w: Wire) => {
    const request = toRequest(w);
    if (!request) return null;
    g.trace.gatePassed = false;
    const res = await g.send(request);
    const text = await res.text();
    return { request, status: res.status, code: /<Code>([^<]+)<\/Code>/.exec(text)?.[1] ?? String(res.status), text };
  };

  const first = (await send(original))!;
  if (first.status >= 400) return void tally.failures.push(`${seedOf}: the request as signed was refused (${first.status} ${first.text.slice(0, 300)})`);

  const variants: Array<Mutation & { mustRefuse: boolean }> = mutations(original, prng(SEED + index), g.uploadId).map((m) => ({ ...m, mustRefuse: false }));
  for (const [label, as] of RESIGNED.filter(([, as]) => !(as.region && base.scheme.kind.startsWith('v2-'))))
    variants.push({ label: `re-signed: ${label}`, wire: await base.sign(as), mustRefuse: true });

  let before = await snapshot(g.catalog);
  for (const v of variants) {
    const what = `${seedOf}, mutation "${v.label}"`;
    const res = await send(v.wire);
    if (!res) {
      tally.unsendable++;
      continue;
    }
    tally.cases++;
    tally.codes.set(res.code, (tally.codes.get(res.code) ?? 0) + 1);
    const after = await snapshot(g.catalog);
    const same = !v.mustRefuse && fingerprint(res.request, v.wire.body, base.scheme, signed) === originalFingerprint;
    const fail = (why: string) => tally.failures.push(`${what}: ${why} (${res.status} ${res.text.slice(0, 300)})`);
    if (res.status === 500 || res.code === 'InternalError') fail('a 500');
    if (same) {
      tally.sameRequest++;
    } else {
      tally.different++;
      if (res.status < 400) fail('asks for something else than was signed, and was let through');
      else if (g.trace.gatePassed && !(base.scheme.body !== 'unsigned' && BODY_CODES.has(res.code))) fail('refused only after the gate had let it through');
    }
    if (res.status >= 400 && after !== before) fail('refused, yet the store changed');
    before = after;
  }
}

describe('the gate under one-element mutations', () => {
  it(`every mutated request is refused with nothing stored, or is exactly what was signed (seed ${SEED})`, async () => {
    const started = Date.now();
    const tally: Tally = { failures: [], cases: 0, different: 0, sameRequest: 0, unsendable: 0, codes: new Map() };
    const bases = baseCases({ uploadId: '' }).length;
    for (let i = 0; i < bases; i++) await run(i, tally);
    const codes = [...tally.codes]
      .sort((a, b) => b[1] - a[1])
      .map(([c, n]) => `${c} ${n}`)
      .join(', ');
    console.log(
      `gate mutation suite: ${bases} base requests, ${tally.cases} mutated requests (${tally.different} asked for something else and had to be refused, ${tally.sameRequest} asked for what was signed; ${tally.unsendable} unsendable) in ${Date.now() - started} ms; answers: ${codes}`,
    );
    expect(tally.failures.slice(0, 30), `${tally.failures.length} failures`).toEqual([]);
    expect(tally.cases).toBeGreaterThan(3000);
  });
});
