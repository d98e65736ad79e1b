#!/usr/bin/env node
// Runs every bench/*.bench.ts in its own process, one after the other (or those named).
import { readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';

const filters = process.argv.slice(2);
const files = readdirSync('bench')
  .filter((f) => f.endsWith('.bench.ts') && (filters.length === 0 || filters.some((x) => f.includes(x))))
  .sort();
let failed = 0;
for (const f of files) {
  console.log(`\n=== bench/${f}`);
  const res = spawnSync(process.execPath, ['--import', 'tsx', '--expose-gc', `bench/${f}`], { stdio: 'inherit' });
  if (res.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
