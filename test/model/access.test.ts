/**
 * model/access.ts on its own: bucket patterns (`*`, `?`, everything else literal), prefixes,
 * listing prefixes, what ListBuckets shows, and when a key is an admin.
 */
import { describe, expect, it } from 'vitest';
import { Access, ANONYMOUS_ACCESS, FULL_ACCESS, NO_ACCESS } from '../../worker/model/access.ts';

describe('Access', () => {
  it('bucket patterns: * any run, ? one character, dots literal', () => {
    const a = new Access([{ buckets: ['logs-*', 'b?t', 'a.b'], actions: ['read'] }]);
    for (const b of ['logs-', 'logs-2026', 'bat', 'bit', 'a.b']) expect(a.allowsObject('read', b, 'k'), b).toBe(true);
    for (const b of ['logs', 'xlogs-1', 'bt', 'boot', 'axb', 'a.bc']) expect(a.allowsObject('read', b, 'k'), b).toBe(false);
    expect(a.allowsObject('write', 'logs-1', 'k')).toBe(false);
  });

  it('prefixes: objects and listings inside them only; whole-bucket actions need a grant without prefixes', () => {
    const a = new Access([{ buckets: ['p'], prefixes: ['in/', 'tmp'], actions: ['read', 'list', 'write', 'delete'] }]);
    expect(a.allowsObject('write', 'p', 'in/x')).toBe(true);
    expect(a.allowsObject('write', 'p', 'tmp-1')).toBe(true);
    expect(a.allowsObject('write', 'p', 'out/x')).toBe(false);
    expect(a.allowsObject('write', 'p', 'in')).toBe(false);
    expect(a.allowsListing('p', 'in/sub/')).toBe(true);
    expect(a.allowsListing('p', 'i')).toBe(false);
    expect(a.allowsListing('p', '')).toBe(false);
    expect(a.allowsBucket('write', 'p')).toBe(false);
    expect(a.allowsSomeOf('delete', 'p')).toBe(true);
    expect(a.admin).toBe(false);
  });

  it('grants add up; admin only from a grant for every bucket without prefixes; ListBuckets ignores admin-only grants', () => {
    const a = new Access([
      { buckets: ['x'], actions: ['read'] },
      { buckets: ['*'], actions: ['admin'] },
    ]);
    expect(a.admin).toBe(true);
    expect(a.seesBucket('x')).toBe(true);
    expect(a.seesBucket('y')).toBe(false);
    expect(new Access([{ buckets: ['x'], actions: ['admin'] }]).admin).toBe(false);
    expect(new Access([{ buckets: ['*'], prefixes: ['a'], actions: ['admin'] }]).admin).toBe(false);
  });

  it('the fixed scopes', () => {
    expect(FULL_ACCESS.admin && FULL_ACCESS.allowsBucket('delete', 'any')).toBe(true);
    expect(ANONYMOUS_ACCESS.admin).toBe(false);
    expect(ANONYMOUS_ACCESS.allowsObject('write', 'any', 'k')).toBe(true);
    expect(NO_ACCESS.seesBucket('any') || NO_ACCESS.allowsObject('read', 'any', 'k') || NO_ACCESS.admin).toBe(false);
  });
});
