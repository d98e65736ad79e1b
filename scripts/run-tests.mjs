#!/usr/bin/env node
// Runs node's test runner over test/**/*.test.ts (Node 20's --test takes no globs).
// Usage: node scripts/run-tests.mjs [--unit] [--list] [--no-build] [--concurrency=N] [substring ...]
//   e.g. `ids topology` to run a subset.
// --unit runs only the files that start no server (no MariaDB, PostgreSQL, etcd, Redis,
// memcached or Chromium) and are not marked `@integration`: the inner loop after each edit. It
// runs them a batch of files per Node process (see runBatches). --list prints the chosen files;
// --no-build skips the build that comes first when dist/ is older than src/; --concurrency sets
// how many test processes run at once (default: the number of cores, at least 2).
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join, normalize, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
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
// `@integration` marks a server-free file that is an integration test in spirit: it runs the real
// binary as a service and kills it (-9), compiles with tsc, or drives several processes through
// TLS and signals. Each costs seconds of CPU in child processes, so it runs in `npm test` (every
// file, as always) but not in the one-minute `--unit` loop.
const INTEGRATION_MARKER = '@integration';
const isIntegration = (file) => readFileSync(file, 'utf8').includes(INTEGRATION_MARKER);

const args = process.argv.slice(2);
const unit = args.includes('--unit');
const listOnly = args.includes('--list');
const concurrencyArg = args.find((a) => a.startsWith('--concurrency='));
const concurrency = concurrencyArg ? Number(concurrencyArg.slice('--concurrency='.length)) : Math.max(2, availableParallelism());
if (!Number.isInteger(concurrency) || concurrency < 1) {
  console.error(`--concurrency must be a positive integer, got ${concurrencyArg}`);
  process.exit(2);
}
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

const chosen = unit ? files.filter((f) => !needsServers(f) && !isIntegration(f)) : files;
if (chosen.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
if (listOnly) {
  console.log(chosen.join('\n'));
  process.exit(0);
}
// Tests that run the binary (real-process checks: exit codes, pipes, signals, `serve`) need
// dist/: build first when it is missing or older than src/ (a few seconds with TypeScript 7), so
// no test runs a stale build; skip it when it is fresh. Other CLI tests run src/ in-process
// (test/cli/cli-harness.ts).
function newestMs(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMs(p) : statSync(p).mtimeMs);
  }
  return newest;
}
const builtCli = 'dist/cli/main.js';
const fresh = existsSync(builtCli) && statSync(builtCli).mtimeMs >= Math.max(newestMs('src'), statSync('tsconfig.json').mtimeMs);
if (!args.includes('--no-build') && !fresh) {
  const build = spawnSync('npm', ['run', '--silent', 'build'], { stdio: 'inherit' });
  if (build.status !== 0) process.exit(build.status ?? 1);
}

/**
 * Each test file in its own Node process costs the process, tsx and every module it loads
 * (~0.5-1 s of CPU) before its first test. The unit files run instead as batches: a batch is one
 * process that imports its files one after the other, each inside a describe() named after the
 * file, so a file's before/after/beforeEach hooks stay its own. There are more batches than
 * processes at once, so the runner evens out slow and fast batches. The full suite keeps one
 * process per file (its files start servers and may set process-wide state).
 */
function runBatches(testFiles) {
  const count = Math.min(testFiles.length, concurrency * 3);
  const batches = Array.from({ length: count }, () => []);
  testFiles.forEach((f, i) => batches[i % count].push(f));
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-unit-'));
  try {
    const entries = batches.map((files, i) => {
      const entry = join(dir, `batch-${String(i + 1).padStart(2, '0')}.test.mjs`);
      const lines = files.map((f) => `describe(${JSON.stringify(f)}, async () => { await import(${JSON.stringify(pathToFileURL(resolve(f)).href)}); });`);
      writeFileSync(entry, `import { describe } from 'node:test';\n${lines.join('\n')}\n`);
      return entry;
    });
    return runNodeTest(entries);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function runNodeTest(testFiles) {
  const res = spawnSync(process.execPath, ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, '--test-reporter=spec', ...testFiles], {
    stdio: 'inherit',
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  return res.status ?? 1;
}

process.exit(unit ? runBatches(chosen) : runNodeTest(chosen));
