/**
 * @server-free (imports the dev cluster only for its defaults; scripts/run-tests.mjs --unit)
 * The CLI defines every command cheaply and imports a command's implementation (and fastify,
 * mysql2, RocksDB, SQLite, Parquet, zod ...) only when that command runs.
 * @integration (scripts/run-tests.mjs: in `npm test`, not `npm run test:unit`): it records what
 * ~10 processes of the built binary load (~4 s of CPU in child processes).
 */
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HELP_DEFAULT_DEV_PAIRS, HELP_DEFAULT_DEV_SHARDS } from '../../src/cli/commands/dev.js';
import { HELP_MAX_DEV_TICKET_SERVERS } from '../../src/cli/commands/tickets.js';
import { DEFAULT_DEV_PAIRS, DEFAULT_DEV_SHARDS } from '../../src/ops/dev-cluster.js';
import { MAX_DEV_TICKET_SERVERS } from '../../src/ops/dev-ticket-servers.js';
import { CLI, ROOT, ensureBuilt } from './cli-harness.js';

before(ensureBuilt);

const HEAVY = ['fastify', 'mysql2', 'rocksdb-native', 'better-sqlite3', '@dsnp/parquetjs', 'zod', 'pino', 'prom-client', 'cli-progress'];
/**
 * rocksdb-native is loaded with createRequire, which the recorder's resolve hook does not see:
 * src/widecolumn/rocksdb.ts, the one module that requires it, stands for it.
 */
const ROCKSDB_WRAPPER = /\/widecolumn\/rocksdb\.js$/;

/** The node_modules packages and the module URLs `shardkit <args>` loads. */
function packagesLoaded(args: string[]): { code: number | null; stdout: string; stderr: string; packages: Set<string>; urls: string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-imports-'));
  const record = join(dir, 'imports.txt');
  try {
    const res = spawnSync(process.execPath, ['--import', join(ROOT, 'test/cli/fixtures/record-imports.mjs'), CLI, ...args], {
      cwd: ROOT, encoding: 'utf8', timeout: 60_000, env: { ...process.env, NODE_OPTIONS: '', RECORD_IMPORTS_TO: record },
    });
    const packages = new Set<string>();
    const urls = readFileSync(record, 'utf8').split('\n');
    for (const url of urls) {
      const m = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
      if (m) packages.add(m[1]!);
    }
    return { code: res.status, stdout: res.stdout, stderr: res.stderr, packages, urls };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('--help, a command\'s --help and `id decode` load no heavy dependency', () => {
  for (const args of [['--help'], ['serve', '--help'], ['dev', 'up', '--help'], ['wc', '--help'], ['wc', 'compact', '--help'], ['help', 'wc'], ['id', 'decode', '241294492511762325']]) {
    const r = packagesLoaded(args);
    assert.equal(r.code, 0, args.join(' '));
    assert.ok(r.packages.has('commander'), `the recorder saw commander for ${args.join(' ')}`);
    const heavy = HEAVY.filter((p) => r.packages.has(p));
    assert.deepEqual(heavy, [], `${args.join(' ')} loaded ${heavy.join(', ')}`);
    assert.ok(!r.urls.some((u) => ROCKSDB_WRAPPER.test(u)), `${args.join(' ')} loaded RocksDB`);
  }
});

test('a command loads its dependencies when it runs', () => {
  const r = packagesLoaded(['topology', 'show', '--json']);
  assert.equal(r.code, 0);
  assert.equal((JSON.parse(r.stdout) as { version: number }).version, 1);
  assert.ok(r.packages.has('zod'), 'topology show validates the map with zod');
});

test('a wc command loads RocksDB and the progress display when it runs', () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-no-store-'));
  try {
    const r = packagesLoaded(['wc', 'datasets', '--data', dir]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /^shardkit: NOT_FOUND: no wide-column store in /);
    assert.ok(r.urls.some((u) => ROCKSDB_WRAPPER.test(u)), 'wc datasets imports the RocksDB module');
    assert.ok(r.packages.has('cli-progress'), 'wc datasets imports the progress display');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('help texts quote the real defaults and limits', () => {
  assert.equal(HELP_DEFAULT_DEV_PAIRS, DEFAULT_DEV_PAIRS);
  assert.equal(HELP_DEFAULT_DEV_SHARDS, DEFAULT_DEV_SHARDS);
  assert.equal(HELP_MAX_DEV_TICKET_SERVERS, MAX_DEV_TICKET_SERVERS);
});
