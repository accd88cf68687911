// vitest globalSetup of the root project (it runs once, before either project's tests): prints
// which system tools the suite uses are here, and under SHARDGATE_REQUIRE_ALL_TOOLS=1 (CI) fails
// the run at once when one is not, instead of letting its tests be skipped.

import { prerequisites, prerequisitesTable, requireAllFailure } from './prerequisites.ts';

export default function setup(): void {
  const p = prerequisites();
  console.log(`${prerequisitesTable(p)}\n`);
  const failure = requireAllFailure(p);
  if (failure) throw new Error(failure);
}
