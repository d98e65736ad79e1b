import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import Fastify from 'fastify';
import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet';
import { installErrorHandler } from '../../src/http/error-handler.js';
import { widecolumnRoutes } from '../../src/http/routes/widecolumn-routes.js';
import { WideColumnStore } from '../../src/widecolumn/index.js';
import { tempDir } from './helpers.js';
import { cli as runCli, cliProcess, ensureBuilt } from '../cli/cli-harness.js';

/** `shardkit <args>` in this process (cli-harness.ts): a test server here may be answering it. */
const cli = (...args: string[]) => runCli(args);

async function seed(dir: string): Promise<void> {
  const store = await WideColumnStore.open(join(dir, 'widecolumn'));
  try {
    await store.putDataset('events', { maxVersions: 2 });
    for (let i = 0; i < 6; i++) await store.putRow('events', `user${i % 2}`, [{ column: 'click', value: `pin${i}`, timestamp: 1000 + i }]);
  } finally {
    await store.close();
  }
}

test('wc commands on a data directory: datasets, compact, backup, export, restore', async () => {
  const tmp = tempDir();
  try {
    const data = join(tmp.dir, 'data');
    let r = await cli('wc', 'compact', '--data', data);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^shardkit: NOT_FOUND: no wide-column store in .*\n$/);

    await seed(data);
    r = await cli('wc', 'datasets', '--data', data);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /events\tmaxVersions=2\tttlSeconds=0/);
    r = await cli('wc', 'compact', '--data', data, '--json');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).removedExcessVersions, 2);
    r = await cli('wc', 'backup', join(tmp.dir, 'bk'), '--data', data);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /backup written to .*bk: \d+ records/);
    r = await cli('wc', 'backup', join(tmp.dir, 'bk'), '--data', data);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /ALREADY_EXISTS: backup directory .* is not empty/);
    const file = join(tmp.dir, 'events.parquet');
    r = await cli('wc', 'export', 'events', file, '--data', data);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /exported 4 cells of 2 rows of events/);
    const records = await parquetReadObjects({ file: await asyncBufferFromFile(file) }) as Array<{ row_key: string; value: string }>;
    assert.deepEqual(records.map((x) => `${x.row_key}=${x.value}`).sort(), ['user0=pin2', 'user0=pin4', 'user1=pin3', 'user1=pin5']);
    r = await cli('wc', 'export', 'nope', join(tmp.dir, 'nope.parquet'), '--data', data);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /UNKNOWN_DATASET/);

    const data2 = join(tmp.dir, 'data2');
    r = await cli('wc', 'restore', join(tmp.dir, 'bk'), '--data', data2);
    assert.equal(r.code, 0, r.stderr);
    r = await cli('wc', 'restore', join(tmp.dir, 'bk'), '--data', data2);
    assert.equal(r.code, 2, 'a restore never overwrites a store');
    assert.match(r.stderr, /ALREADY_EXISTS/);
    const restored = await WideColumnStore.open(join(data2, 'widecolumn'));
    try {
      const row = await restored.getRow('events', 'user1', { versions: 5 });
      assert.deepEqual(row.columns[0]!.cells.map((c) => c.value.toString()), ['pin5', 'pin3']);
    } finally {
      await restored.close();
    }
    r = await cli('wc', '--help');
    assert.equal(r.code, 0);
    assert.match(r.stdout, /compact/);
    assert.match(r.stdout, /--url/);
  } finally {
    tmp.cleanup();
  }
});

test('wc while a service holds the store: a clear STORE_LOCKED line, and --url asks the service instead', async () => {
  const tmp = tempDir();
  const data = join(tmp.dir, 'data');
  await seed(data);
  const store = await WideColumnStore.open(join(data, 'widecolumn'));
  const app = Fastify();
  installErrorHandler(app);
  await app.register(widecolumnRoutes(store));
  try {
    const address = await app.listen({ host: '127.0.0.1', port: 0 });
    // Another process: the built binary (RocksDB's lock is per process).
    ensureBuilt();
    let r = await cliProcess(['wc', 'compact', '--data', data]);
    assert.equal(r.code, 2);
    assert.equal(r.stderr.split('\n').length, 2, 'one line');
    assert.match(r.stderr, /^shardkit: STORE_LOCKED: the wide-column store in .* is in use by another process .*--url/);

    r = await cli('wc', 'compact', '--url', address, '--json');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).removedExcessVersions, 2);
    r = await cli('wc', 'datasets', '--url', address);
    assert.match(r.stdout, /events/);
    // Through the service, backups and exports are names in its export directory, never paths.
    const exports = join(data, 'widecolumn-exports');
    r = await cli('wc', 'backup', 'bk', '--url', address);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.stdout.startsWith(`backup written to ${join(exports, 'bk')} on the service machine: `), r.stdout);
    assert.match(r.stdout, /: [1-9]\d* records, \d+ bytes in 1 file\(s\)\n$/);
    assert.ok(existsSync(join(exports, 'bk', 'manifest.json')));
    r = await cli('wc', 'backup', join(tmp.dir, 'bk2'), '--url', address);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^shardkit: INVALID_ARGUMENT: .*not a plain name.*\(from http.*\n$/);
    assert.equal(existsSync(join(tmp.dir, 'bk2')), false);
    r = await cli('wc', 'export', 'events', 'e.parquet', '--url', address, '--json');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).file, join(exports, 'e.parquet'));
    assert.ok(existsSync(join(exports, 'e.parquet')));
    r = await cli('wc', 'export', 'events', '../e2.parquet', '--url', address);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /INVALID_ARGUMENT/);
    assert.equal(existsSync(join(data, 'e2.parquet')), false);
    r = await cli('wc', 'export', 'nope', 'n.parquet', '--url', address);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /UNKNOWN_DATASET: no wide-column dataset named nope \(from http/);
    r = await cli('wc', 'restore', join(exports, 'bk'), '--url', address);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /stop it, restore with --data/);
    r = await cli('wc', 'compact', '--url', 'http://127.0.0.1:1');
    assert.equal(r.code, 1);
    assert.match(r.stderr, /cannot reach the service at http:\/\/127\.0\.0\.1:1/);
  } finally {
    await app.close();
    await store.close();
    tmp.cleanup();
  }
});
