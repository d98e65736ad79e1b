#!/usr/bin/env node
// Runs node's test runner over test/**/*.test.ts (Node 20's --test takes no globs).
// Usage: node scripts/run-tests.mjs [--unit] [substring ...]   e.g. `ids topology` to run a subset.
// --unit runs only the files that start no server (no MariaDB, PostgreSQL, etcd, Redis,
// memcached or Chromium): the inner loop after each edit. --list prints the chosen files;
// --no-build skips the build that comes first.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { spawnSync } from 'node:child_process';

// A test needs servers when it, or a test helper it imports (transitively, inside test/), imports
// one of these. They are the modules that start a real server or browser.
const SERVER_STARTERS = [
  'src/ops/mariadb/mariadb-instance',
  'src/ops/postgres/postgres-instance',
  'src/ops/dev-cluster',
  'src/ops/dev-ticket-servers',
  'test/topology/etcd-server',
  'test/cache/cache-servers',
  'test/mysql/cluster-fixture',
  'test/storage/postgres-servers',
  'test/tickets/ticket-cluster',
  'playwright-core',
];
// A file says so when the rule above is wrong for it: `@needs-servers` when it starts servers
// another way (a child process), `@server-free` when it imports a starter only for constants.
const SERVER_MARKER = '@needs-servers';
const FREE_MARKER = '@server-free';

const args = process.argv.slice(2);
const unit = args.includes('--unit');
const listOnly = args.includes('--list');
const filters = args.filter((a) => !a.startsWith('--'));

const files = [];
(function walk(dir) {
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else if (name.endsWith('.test.ts') && (filters.length === 0 || filters.some((f) => p.includes(f)))) files.push(p);
  }
})('test');

const importRe = /(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;
const memo = new Map();
function needsServers(file, seen = new Set()) {
  if (memo.has(file)) return memo.get(file);
  if (seen.has(file)) return false;
  seen.add(file);
  let text;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return false;
  }
  if (text.includes(FREE_MARKER)) {
    memo.set(file, false);
    return false;
  }
  let result = text.includes(SERVER_MARKER);
  for (const m of text.matchAll(importRe)) {
    if (result) break;
    const spec = m[1] ?? m[2];
    if (spec === 'playwright-core') result = true;
    if (!spec.startsWith('.')) continue;
    const target = relative(process.cwd(), normalize(join(dirname(file), spec))).replace(/\.js$/, '');
    if (SERVER_STARTERS.some((s) => target === s)) result = true;
    else if (target.startsWith('test/')) result = needsServers(`${target}.ts`, seen);
  }
  memo.set(file, result);
  return result;
}

const chosen = unit ? files.filter((f) => !needsServers(f)) : files;
if (chosen.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
if (listOnly) {
  console.log(chosen.join('\n'));
  process.exit(0);
}
// CLI tests run dist/cli/main.js (a process under tsx starts ~1 s slower), so build first: a few
// seconds with TypeScript 7, and no test ever runs a stale build.
if (!args.includes('--no-build')) {
  const build = spawnSync('npm', ['run', '--silent', 'build'], { stdio: 'inherit' });
  if (build.status !== 0) process.exit(build.status ?? 1);
}
const res = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-reporter=spec', ...chosen], {
  stdio: 'inherit',
  env: { ...process.env, NODE_OPTIONS: '' },
});
process.exit(res.status ?? 1);
