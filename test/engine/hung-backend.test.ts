/**
 * A hung backend and backends known down (issue 37, "operator truth"): every wait for a backend
 * is bounded (backends/deadline.ts: here a configured bound of 30 ms, so nothing waits long), a
 * call that hit the bound marks the backend down (engine/reachability.ts, fed by the metered
 * backends' reports as the gateway feeds it), and from then on the engine refuses at once what
 * cannot succeed (a 503 without a call reaching the hung backend), reads around what it can, and
 * places new writes elsewhere when the fleet allows. Behaviour is asserted (calls made, the
 * bound's abort seen by the hung backend), never wall time.
 */
import { describe, expect, it } from 'vitest';
import { DeadlineBackend } from '../../backends/deadline.ts';
import { FaultyBackend } from '../../backends/faulty.ts';
import { MemoryBackend } from '../../backends/memory.ts';
import { MeteredBackend } from '../../backends/metered.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { BackendReachability, RECHECK_AFTER_MS, REFUSED_DOWN_MS, RETRY_DOWN_AFTER_MS } from '../../worker/engine/reachability.ts';
import { QuorumError } from '../../worker/engine/shard-set.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { toS3Error } from '../../worker/app/error-map.ts';
import { DEV_KEY_RING } from '../support/dev-encryption.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { readBytes } from '../support/read-bytes.ts';

const WAIT_MS = 30;

function fleet(n = 6, maintenance: string[] = []) {
  let clock = 1_000_000;
  const faulty = Array.from({ length: n }, (_, i) => new FaultyBackend(new MemoryBackend({ id: `b${i}`, domain: `z${i}` })));
  const reachability = new BackendReachability(new Set(maintenance), () => clock);
  const backends = faulty.map(
    (f) =>
      new MeteredBackend(new DeadlineBackend(f, () => ({ ms: WAIT_MS })), (r) => {
        if (r.outcome === 'Unavailable' || r.outcome === 'Timeout') reachability.report(r.backend, false, r.outcome === 'Timeout');
        else if (r.outcome !== 'Aborted' && r.outcome !== 'Throttled') reachability.report(r.backend, true);
      }),
  );
  const config = parseConfig({
    backends: faulty.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
    policies: { ec: { k: 4, m: 2, blockSize: 4096, writeQuorum: 5 } },
    defaultPolicy: 'ec',
  });
  const catalog = localCatalog();
  const store = new EcStore({ catalog, units: new UnitStore(backends, undefined, { keyRing: DEV_KEY_RING, reachability }), settings: engineSettings(config) });
  const body = (n: number) => new Uint8Array(n).map((_, i) => (i * 7) % 251);
  const put = (key: string, size = 20_000) =>
    store.putObject('data', key, new Blob([body(size)]).stream(), { contentLength: size, metadata: { user: {} }, checksum: null, conditions: {} });
  const get = async (key: string) => readBytes((await store.getObject('data', key, { conditions: {} })).body);
  const callsTo = (ids: string[]) => faulty.filter((f) => ids.includes(f.id)).reduce((n, f) => n + f.calls.length, 0);
  return { faulty, reachability, catalog, store, put, get, body, callsTo, advance: (ms: number) => void (clock += ms) };
}

const refusedAtOnce = (err: unknown) => err instanceof QuorumError && /refused without calling them/.test(err.message);

describe('a hung backend: bounded waits, then refused at once', () => {
  it('a write: the first waits only its bound (the hung puts are aborted), the next is refused without a call; 503 both', async () => {
    const f = fleet();
    await f.store.createBucket('data', { region: 'us-east-1' });
    f.faulty[0]!.hangWhen();
    f.faulty[1]!.hangWhen();
    const first = await f.put('a').catch((e) => e);
    expect(first).toBeInstanceOf(QuorumError); // 4 of 6 stored, quorum 5
    expect(toS3Error(first).code).toBe('ServiceUnavailable');
    // The bound fired: each hung put saw its signal abort with a Timeout.
    expect(f.faulty[0]!.abortedHangs.map((c) => c.op)).toContain('put');
    expect(f.faulty[1]!.abortedHangs.map((c) => c.op)).toContain('put');
    expect(f.reachability.isDown('b0') && f.reachability.isDown('b1')).toBe(true);

    const before = f.callsTo(['b0', 'b1']);
    const second = await f.put('b').catch((e) => e);
    expect(refusedAtOnce(second), String(second)).toBe(true);
    expect(toS3Error(second).code).toBe('ServiceUnavailable');
    expect(f.callsTo(['b0', 'b1'])).toBe(before); // no call reached the hung backends

    // A second later, still hung: the refusal first asks them again (one probe each, bounded), then refuses.
    f.advance(RECHECK_AFTER_MS);
    const third = await f.put('b').catch((e) => e);
    expect(refusedAtOnce(third), String(third)).toBe(true);
    expect(f.faulty[0]!.calls.slice(-1)).toEqual([expect.objectContaining({ op: 'head', key: 'shardgate-probe' })]);
    expect(f.callsTo(['b0', 'b1'])).toBe(before + 2);

    // Back: the next refusal's recheck finds them answering, and the write goes through.
    f.faulty[0]!.heal();
    f.faulty[1]!.heal();
    f.advance(RECHECK_AFTER_MS);
    await f.put('c');
    expect(await f.get('c')).toEqual(f.body(20_000));
  });

  it('after its window a backend known down is called again: 15 s when it hung, 2 s when it refused at once', async () => {
    const f = fleet();
    await f.store.createBucket('data', { region: 'us-east-1' });
    f.reachability.report('b0', false, true); // hung
    f.reachability.report('b1', false); // refused at once (a restart: back within seconds)
    f.advance(REFUSED_DOWN_MS);
    expect([f.reachability.isDown('b0'), f.reachability.isDown('b1')]).toEqual([true, false]);
    expect(f.reachability.failing('b1')).toBe(true); // what a health answer says until a call succeeds
    f.advance(RETRY_DOWN_AFTER_MS - REFUSED_DOWN_MS);
    expect(f.reachability.isDown('b0')).toBe(false);
    await f.put('d');
    expect(f.faulty[0]!.calls.map((c) => c.op)).toEqual(['put']);
    expect(f.reachability.failing('b1')).toBe(false);
  });

  it('a read: below k it fails at its bound, then is refused without a call; one hung backend is read around', async () => {
    const f = fleet();
    await f.store.createBucket('data', { region: 'us-east-1' });
    await f.put('x');
    f.faulty[5]!.hangWhen(); // one hung: the read waits its bound for that shard, then decodes around it
    const placement = await f.store.getObject('data', 'x', { conditions: {} }).then(async (r) => (await readBytes(r.body), true));
    expect(placement).toBe(true);
    for (const i of [0, 1, 2]) f.faulty[i]!.hangWhen(); // now four hung: fewer than k reachable
    const first = await f.get('x').catch((e) => e);
    expect(toS3Error(first).code).toBe('ServiceUnavailable');
    expect(f.faulty.slice(0, 3).some((b) => b.abortedHangs.some((c) => c.op === 'get'))).toBe(true);

    const hung = ['b0', 'b1', 'b2', 'b5'];
    const before = f.callsTo(hung);
    const second = await f.get('x').catch((e) => e);
    expect(refusedAtOnce(second), String(second)).toBe(true);
    expect(f.callsTo(hung)).toBe(before);

    // Two recover (a probe's answer reports them up): the read skips the two still down, calls only the others.
    f.faulty[0]!.heal();
    f.faulty[1]!.heal();
    f.reachability.report('b0', true);
    f.reachability.report('b1', true);
    const still = f.callsTo(['b2', 'b5']);
    expect(await f.get('x')).toEqual(f.body(20_000));
    expect(f.callsTo(['b2', 'b5'])).toBe(still);
  });
});

describe('maintenance: a backend known down', () => {
  it('with room in the fleet, writes place around it and reads never call it', async () => {
    const f = fleet(7, ['b6']);
    await f.store.createBucket('data', { region: 'us-east-1' });
    for (const key of ['k1', 'k2', 'k3', 'k4', 'k5']) await f.put(key);
    for (const key of ['k1', 'k2', 'k3', 'k4', 'k5']) expect(await f.get(key)).toEqual(f.body(20_000));
    expect(f.faulty[6]!.calls).toEqual([]);
  });

  it('without room, its shard is missed at once (repair writes it later) and it is still never called', async () => {
    const f = fleet(6, ['b3']);
    await f.store.createBucket('data', { region: 'us-east-1' });
    await f.put('k');
    const m = await f.store.getObject('data', 'k', { conditions: {} });
    await readBytes(m.body);
    expect(f.faulty[3]!.calls).toEqual([]);
    const stored = await f.catalog.getManifest('data', 'k');
    const unit = stored?.storage.kind === 'coded' ? stored.storage.units[0]! : null;
    expect(unit!.missing).toEqual([unit!.placement.indexOf('b3')]); // on the repair worklist
  });
});
