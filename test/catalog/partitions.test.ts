// A bucket over several catalog objects (docs/PARTITIONS.md, slices 2 and 3): the whole catalog
// contract over buckets split statically into partitions, in Node over the product's SQL
// (test/support/local-catalog.ts), and what only a split bucket can get wrong.

import { describe, expect, it } from 'vitest';
import { localCatalog } from '../support/local-catalog.ts';
import { runCatalogContract } from './contract.ts';
import { expectS3, manifest } from './fixtures.ts';

/** Boundaries cutting through the keys the contract uses ('a', 'b/..', 'k', 'x/..' and others). */
const SPLIT = ['a/', 'b', 'd', 'k', 'k/', 'm', 'x'];

runCatalogContract('sql in node, buckets split in 8 partitions', (options) => localCatalog(options), { split: SPLIT });
