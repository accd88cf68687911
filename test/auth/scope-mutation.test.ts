/**
 * The gate's mutation suite extended to scopes (issue 21). Three scoped keys: read-only (read and
 * list on every bucket), one bucket pattern (`fz-*`, every S3 action: nothing on bucket fz), and a
 * prefix key (bucket fz, keys under `dir/`, read list write delete). Every base request of
 * mutation/bases.ts and scope-bases.ts (header and presigned SigV4, SigV2, aws-chunked,
 * CopyObject and UploadPartCopy with sources in and out of scope, Complete, DeleteObjects) is
 * signed with each key and sent as signed, then mutated one element at a time. For each answer:
 * - never a 500;
 * - let through (< 400): it asks for exactly what was signed (mutation/wire.ts fingerprint) AND
 *   the oracle here, written apart from worker/model/access.ts, says the scope allows it;
 * - refused: the store (buckets, objects, uploads, parts) is exactly as before;
 * - the request as signed: let through if and only if the oracle allows it, refused with
 *   AccessDenied otherwise.
 * Seeded as the gate's suite (SHARDGATE_MUTATION_SEED).
 */
import { describe, expect, it } from 'vitest';
import { prng } from '../support/random.ts';
import { baseCases, type BaseCase } from './mutation/bases.ts';
import { mutations } from './mutation/mutations.ts';
import { BASE_NEEDS, scopeCases, type Need, type ScopeState } from './mutation/scope-bases.ts';
import { fingerprint, signedHeaderNames, toRequest, type Wire } from './mutation/wire.ts';
import { snapshotStore } from './helpers/store-snapshot.ts';
import { oracleAllows, SCOPES, scopedGateway, type TestScope } from './mutation/scoped-gateway.ts';

const SEED = Number(process.env.SHARDGATE_MUTATION_SEED ?? 20261201);

type Case = BaseCase & { needs: Need[] };

function allCases(state: ScopeState): Case[] {
  const bases = baseCases({ uploadId: state.uploadId }).map((b) => {
    const needs = BASE_NEEDS[b.name];
    if (!needs) throw new Error(`no needs for base "${b.name}" in scope-bases.ts`);
    return { ...b, needs };
  });
  return [...bases, ...scopeCases(state)];
}

interface Tally {
  failures: string[];
  variants: number;
  letThrough: number;
  refusedAsSigned: number;
}

async function runCase(scope: TestScope, index: number, tally: Tally): Promise<void> {
  const g = await scopedGateway();
  const c = allCases(g.state)[index]!;
  const what = `seed ${SEED}, ${scope.name}, base ${index} (${c.name})`;
  const allowed = c.needs.every((n) => oracleAllows(scope, n));
  const original = await c.sign({ accessKeyId: scope.accessKeyId, secret: scope.secret });
  const signed = signedHeaderNames(original, c.scheme);
  const originalFingerprint = fingerprint(toRequest(original)!, original.body, c.scheme, signed);

  const send = async (w: Wire) => {
    const request = toRequest(w);
    if (!request) return null;
    g.trace.gatePassed = false;
    const res = await g.send(request);
    const text = await res.text();
    return { request, status: res.status, code: /<Code>([^<]+)<\/Code>/.exec(text)?.[1] ?? String(res.status), text };
  };

  let before = await snapshotStore(g.catalog);
  const check = async (label: string, w: Wire, asSigned: boolean) => {
    const res = await send(w);
    if (!res) return;
    tally.variants++;
    const after = await snapshotStore(g.catalog);
    const fail = (why: string) => tally.failures.push(`${what}, ${label}: ${why} (${res.status} ${res.text.slice(0, 200)})`);
    if (res.status === 500 || res.code === 'InternalError') fail('a 500');
    if (res.status < 400) {
      tally.letThrough++;
      if (!allowed) fail('let through, yet the scope does not allow what was signed');
      else if (fingerprint(res.request, w.body, c.scheme, signed) !== originalFingerprint) fail('let through, yet asks for something else than was signed');
    } else if (after !== before) fail('refused, yet the store changed');
    if (asSigned && allowed && res.status >= 400) fail('the scope allows it, yet it was refused');
    if (asSigned && !allowed) {
      tally.refusedAsSigned++;
      if (res.code !== 'AccessDenied' && !(w.method === 'HEAD' && res.status === 403)) fail('out of scope, yet not AccessDenied');
      if (g.trace.gatePassed === false) fail('refused before the gate checked the signature');
    }
    before = after;
  };
  await check('as signed', original, true);
  const variants = mutations(original, prng(SEED + index), g.state.uploadId);
  for (const v of variants) await check(`mutation "${v.label}"`, v.wire, false);
}

describe('scoped keys under one-element mutations', () => {
  for (const scope of SCOPES) {
    it(`${scope.name}: only what its scope allows, nothing stored by a refusal (seed ${SEED})`, async () => {
      const tally: Tally = { failures: [], variants: 0, letThrough: 0, refusedAsSigned: 0 };
      const g = await scopedGateway();
      const count = allCases(g.state).length;
      for (let i = 0; i < count; i++) await runCase(scope, i, tally);
      console.log(
        `scope suite, ${scope.name}: ${count} base requests, ${tally.variants} requests (${tally.letThrough} let through, ${tally.refusedAsSigned} bases refused as signed)`,
      );
      expect(tally.failures.slice(0, 40), `${tally.failures.length} failures`).toEqual([]);
      expect(tally.variants).toBeGreaterThan(100);
      expect(tally.refusedAsSigned).toBeGreaterThan(5);
    }, 300_000);
  }
});
