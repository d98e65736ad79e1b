#!/usr/bin/env node
// Runs node's test runner over test/**/*.test.ts (Node 20's --test takes no globs).
// Usage: node scripts/run-tests.mjs [substring ...]   e.g. `ids topology` to run a subset.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

const filters = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const files = [];
(function walk(dir) {
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else if (name.endsWith('.test.ts') && (filters.length === 0 || filters.some((f) => p.includes(f)))) files.push(p);
  }
})('test');
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
const res = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-reporter=spec', ...files], {
  stdio: 'inherit',
  env: { ...process.env, NODE_OPTIONS: '' },
});
process.exit(res.status ?? 1);
