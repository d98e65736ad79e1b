#!/usr/bin/env node
// Runs node's test runner over test/**/*.test.ts (Node 20's --test takes no globs).
// Usage: node scripts/run-tests.mjs [--unit] [--list] [--no-build] [--concurrency=N] [substring ...]
//   e.g. `ids topology` to run a subset.
// --unit runs only the files that start no server (no MariaDB, PostgreSQL, etcd, Redis,
// memcached or Chromium) and are not marked `@integration`: the inner loop after each edit. It
// runs them a batch of files per Node process (see runBatches). --list prints the chosen files;
// --no-build skips the build that comes first when dist/ is older than src/; --concurrency sets
// how many test processes run at once (default: the number of cores, at least 2).
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
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
 * file, so a file's before/after/beforeEach hooks stay its own. There is one batch per process
 * that runs at once (more batches load the same modules again: ~4 s of CPU each), and the files
 * are dealt out by how long each took last time (TIMES, written after every --unit run; a file
 * not timed yet counts as the median), longest first to the least loaded batch, so the batches
 * end together. The full suite keeps one process per file (its files start servers and may set
 * process-wide state).
 */
const TIMES = '.tmp/unit-times.json';

function readTimes() {
  try {
    const times = JSON.parse(readFileSync(TIMES, 'utf8'));
    return times && typeof times === 'object' ? times : {};
  } catch {
    return {};
  }
}

function dealOut(testFiles, count, times) {
  const known = testFiles.map((f) => times[f]).filter((t) => typeof t === 'number').sort((a, b) => a - b);
  const median = known.length > 0 ? known[Math.floor(known.length / 2)] : 1;
  const cost = (f) => (typeof times[f] === 'number' ? times[f] : median);
  const batches = Array.from({ length: count }, () => ({ files: [], total: 0 }));
  for (const f of [...testFiles].sort((a, b) => cost(b) - cost(a) || a.localeCompare(b))) {
    const least = batches.reduce((min, b) => (b.total < min.total ? b : min));
    least.files.push(f);
    least.total += cost(f);
  }
  return batches.map((b) => b.files).filter((files) => files.length > 0);
}

function runBatches(testFiles) {
  const times = readTimes();
  const batches = dealOut(testFiles, Math.min(testFiles.length, concurrency), times);
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-unit-'));
  const timesLog = join(dir, 'times.tsv');
  try {
    const entries = batches.map((files, i) => {
      const entry = join(dir, `batch-${String(i + 1).padStart(2, '0')}.test.mjs`);
      // The time of a file runs from before its first test to after its last (its imports are
      // loaded once per batch and shared, so they are not the file's).
      const lines = files.map((f) => `describe(${JSON.stringify(f)}, async () => {
  let start = 0;
  before(() => { start = performance.now(); });
  after(() => appendFileSync(${JSON.stringify(timesLog)}, ${JSON.stringify(f)} + '\\t' + Math.round(performance.now() - start) + '\\n'));
  await import(${JSON.stringify(pathToFileURL(resolve(f)).href)});
});`);
      writeFileSync(entry, `import { describe, before, after } from 'node:test';\nimport { appendFileSync } from 'node:fs';\n${lines.join('\n')}\n`);
      return entry;
    });
    const status = runNodeTest(entries);
    if (existsSync(timesLog)) {
      for (const line of readFileSync(timesLog, 'utf8').split('\n')) {
        const [f, ms] = line.split('\t');
        if (f && ms) times[f] = Number(ms);
      }
      mkdirSync(dirname(TIMES), { recursive: true });
      writeFileSync(TIMES, `${JSON.stringify(times, null, 1)}\n`);
    }
    return status;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// SHARDKIT_UNIT=1 tells the randomized model tests to run half their operation counts
// (test/conformance/widecolumn-model.ts); the full suite runs them whole.
function runNodeTest(testFiles) {
  const res = spawnSync(process.execPath, ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, '--test-reporter=spec', ...testFiles], {
    stdio: 'inherit',
    env: { ...process.env, NODE_OPTIONS: '', SHARDKIT_UNIT: unit ? '1' : '' },
  });
  return res.status ?? 1;
}

process.exit(unit ? runBatches(chosen) : runNodeTest(chosen));
