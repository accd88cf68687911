#!/usr/bin/env node
// The `shardgate` command (package.json "bin"): runs the TypeScript source of cli/shardgate.ts
// through tsx, a dependency, so `npx shardgate ...` works from a clone with no build step.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('./shardgate.ts');
process.exitCode = await main(process.argv.slice(2));
