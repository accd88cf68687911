/**
 * The roll interval of access logs (worker/gateway.ts accessLogRollMs): 300 s deployed, 5 s with
 * the local-development signal (npm start, ceph/s3-tests: the suite waits 5.5 s), and
 * SHARDGATE_ACCESS_LOG_ROLL_SECONDS over both, refused when it is not 1 to 3600.
 */
import { describe, expect, it } from 'vitest';
import { accessLogRollMs, type Env } from '../../worker/gateway.ts';

const env = (vars: Record<string, string>) => ({ CATALOG: {} as DurableObjectNamespace, ...vars }) as Env;

describe('access log roll interval', () => {
  it('300 s deployed, 5 s locally, the variable over both', () => {
    expect(accessLogRollMs(env({}))).toBe(300_000);
    expect(accessLogRollMs(env({ SHARDGATE_LOCAL_DEV: '1' }))).toBe(5_000);
    expect(accessLogRollMs(env({ SHARDGATE_ACCESS_LOG_ROLL_SECONDS: '60' }))).toBe(60_000);
    expect(accessLogRollMs(env({ SHARDGATE_LOCAL_DEV: '1', SHARDGATE_ACCESS_LOG_ROLL_SECONDS: '2' }))).toBe(2_000);
  });

  it('refuses a value that is not a whole number of seconds from 1 to 3600', () => {
    for (const bad of ['0', '3601', '1.5', 'five', '-3']) {
      expect(() => accessLogRollMs(env({ SHARDGATE_ACCESS_LOG_ROLL_SECONDS: bad }))).toThrow(/SHARDGATE_ACCESS_LOG_ROLL_SECONDS/);
    }
  });
});
