/**
 * Keys the gateway keeps for itself inside a user's bucket: an adopted bucket's tombstones
 * (adopt/tombstones.ts) live under this prefix. Clients may not write them; no event announces them.
 */
export const RESERVED_PREFIX = '.shardgate-adopt/';

export const isReservedKey = (key: string): boolean => key.startsWith(RESERVED_PREFIX);
