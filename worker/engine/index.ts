/**
 * The engine's public face: everything outside worker/engine/ (the composition root, app/,
 * config/, upkeep/, ops/, cli/) imports the engine from here, never a file behind it
 * (test/architecture.test.ts holds that). What a coded unit is on disk is format/'s; this is
 * what the engine does with units: the ObjectStore over them, reading, checking and rebuilding
 * shards, policies, prices and the coding budget. Only what some room outside needs is here;
 * tests and benchmarks may reach behind it.
 */

// The ObjectStore of the gateway, the unit store under it, and the repair work it hands on.
export { EcStore, type RepairTask } from './ec-store.ts';
export { UnitStore } from './unit-store.ts';
export { KmsKeys, TRANSIT_CACHE_MS, type KmsWriteKey, type TransitBacking } from './kms-keys.ts';
export { TransitClient, TransitError, transitVersionOf, type TransitBound, type TransitKeyInfo, type TransitSettings } from './transit-client.ts';
export { TransitProbe, type TransitProbeResult } from './transit-probe.ts';

// Reading: a unit's bytes whatever its layout (openCodedUnit: its plaintext, sealed or not);
// what failed when a shard could not be read; a write or read below quorum.
export { openUnit } from './open-unit.ts';
export { openCodedUnit } from './sealed-read.ts';
export { ShardReadError } from './shard-reader.ts';
export { QuorumError } from './shard-set.ts';
export { BackendReachability } from './reachability.ts';

// Shard files on a backend: header and footer, a whole-file check, a size probe; the rebuild of
// lost shards (repair).
export { probeShardSize, probeShardTail, readShardFile, verifyShardFile, type ShardFileInfo, type ShardState } from './shard-files.ts';
export { rebuildShards } from './shard-rebuild.ts';
// A shard file copied as stored to another backend, through the one writer (the mover).
export { copyCalls, copyShard } from './shard-copy.ts';

// Workers' 6 open subrequests per invocation, and the semaphore that keeps within them.
export { MAX_OPEN_SUBREQUESTS, Semaphore } from './subrequests.ts';

// Policies and how many shards failure domains can place (the config's review), prices.
export {
  knownStorageClass,
  policyFor,
  policyForClass,
  restripePolicyFor,
  STANDARD,
  storageClassNames,
  type EngineSettings,
  type StoragePolicy,
} from './policy.ts';
export { placeableShards, placeShards, replacementBackend } from './placement.ts';
export { BYTES_PER_GB, type BackendPrices } from '../model/prices.ts';

// The isolate's coding memory: who holds it (the request being served) and its leases.
export type { BudgetHolder, BudgetLease } from './coding-budget.ts';

// Tag records beside a unit's shards (the tags as last set): the rebuild reads them.
export { readTagRecord } from './tag-record.ts';
