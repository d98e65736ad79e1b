import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { bodyStrictValidator } from '../../src/http/app.js';
import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet';
import { installErrorHandler } from '../../src/http/error-handler.js';
import { widecolumnRoutes, type WidecolumnRoutesOptions } from '../../src/http/routes/widecolumn-routes.js';
import { ShardKitError } from '../../src/errors.js';
import { resolveExportName } from '../../src/widecolumn/export-dir.js';
import { openWideColumnService, parseWideColumnConfig, restore, WideColumnStore } from '../../src/widecolumn/index.js';
import { tempDir } from './helpers.js';

async function serve(store: WideColumnStore, options?: WidecolumnRoutesOptions): Promise<FastifyInstance> {
  // The same parser settings as buildApp (src/http/app.ts).
  const app = Fastify({ onProtoPoisoning: 'error', ajv: { customOptions: { removeAdditional: false } }, schemaController: { compilersFactory: { buildValidator: bodyStrictValidator } } });
  installErrorHandler(app);
  await app.register(widecolumnRoutes(store, options));
  await app.ready();
  return app;
}

/** Every path under `root` except the store's own directory (RocksDB writes its logs there). */
function tree(root: string): string[] {
  const out: string[] = [];
  (function walk(dir: string) {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (relative(root, p) === 'widecolumn') continue;
      out.push(relative(root, p));
      if (e.isDirectory()) walk(p);
    }
  })(root);
  return out.sort();
}

test('admin backup/export over HTTP: hostile names are refused with 400 and nothing is written anywhere', async () => {
  const tmp = tempDir();
  // The data directory is a level below tmp so that "../x" would land in a directory we watch.
  const data = join(tmp.dir, 'data');
  const store = await WideColumnStore.open(join(data, 'widecolumn'), { shards: 8 });
  const app = await serve(store);
  try {
    await store.putDataset('a', {});
    await store.putRow('a', 'r', [{ column: 'c', value: 'v', timestamp: 1 }]);
    mkdirSync(join(tmp.dir, 'outside'));
    const before = tree(tmp.dir);
    const hostile: unknown[] = [
      '../x', '../../x', '..', '.', '', '/etc/x', join(tmp.dir, 'outside', 'x'), 'a/b', 'a\\b', './x', '.hidden',
      'x'.repeat(129), 'a\0b', '\0', 'x.parquet.partial', 'a b', 'é', '-x', 'x\n',
    ];
    for (const name of hostile) {
      for (const [url, payload] of [
        ['/v1/admin/widecolumn/backup', { name }],
        ['/v1/admin/widecolumn/export', { dataset: 'a', name }],
        ['/v1/admin/widecolumn/export', { dataset: 'a', name, overwrite: true }],
      ] as const) {
        const res = await app.inject({ method: 'POST', url, payload });
        assert.equal(res.statusCode, 400, `${url} ${JSON.stringify(name)}: ${res.body}`);
        assert.equal(res.json().error.code, 'INVALID_ARGUMENT', `${url} ${JSON.stringify(name)}`);
      }
    }
    // The old contract (a path in "dir"/"file") is refused too.
    for (const [url, payload] of [
      ['/v1/admin/widecolumn/backup', { dir: join(tmp.dir, 'outside', 'bk') }],
      ['/v1/admin/widecolumn/export', { dataset: 'a', file: join(tmp.dir, 'outside', 'a.parquet') }],
    ] as const) {
      const res = await app.inject({ method: 'POST', url, payload });
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(res.json().error.code, 'INVALID_ARGUMENT');
    }
    assert.deepEqual(tree(tmp.dir), before, 'no file or directory appeared, not even the export directory');
  } finally {
    await app.close();
    await store.close();
    tmp.cleanup();
  }
});

test('admin backup/export over HTTP: valid names write inside <data>/widecolumn-exports only', async () => {
  const tmp = tempDir();
  const data = join(tmp.dir, 'data');
  const exports = join(data, 'widecolumn-exports');
  const store = await WideColumnStore.open(join(data, 'widecolumn'), { shards: 8 });
  const app = await serve(store);
  try {
    await store.putDataset('a', { maxVersions: 2 });
    for (let i = 0; i < 3; i++) await store.putRow('a', `r${i}`, [{ column: 'c', value: `v${i}`, timestamp: 1 + i }]);

    // An unknown dataset is refused before the export directory is even created.
    let res = await app.inject({ method: 'POST', url: '/v1/admin/widecolumn/export', payload: { dataset: 'nope', name: 'n.parquet' } });
    assert.equal(res.statusCode, 404);
    assert.equal(existsSync(exports), false);

    res = await app.inject({ method: 'POST', url: '/v1/admin/widecolumn/backup', payload: { name: 'nightly-2024.01_a' } });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().name, 'nightly-2024.01_a');
    assert.equal(res.json().dir, join(exports, 'nightly-2024.01_a'));
    assert.ok(existsSync(join(exports, 'nightly-2024.01_a', 'manifest.json')));
    // The backup is a real one: it restores.
    const restored = join(tmp.dir, 'restored');
    assert.equal((await restore(join(exports, 'nightly-2024.01_a'), restored)).records, res.json().records);

    res = await app.inject({ method: 'POST', url: '/v1/admin/widecolumn/export', payload: { dataset: 'a', name: 'a.parquet' } });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual([res.json().name, res.json().file, res.json().rows, res.json().cells], ['a.parquet', join(exports, 'a.parquet'), 3, 3]);
    const records = await parquetReadObjects({ file: await asyncBufferFromFile(join(exports, 'a.parquet')) }) as Array<{ row_key: string }>;
    assert.deepEqual(records.map((x) => x.row_key).sort(), ['r0', 'r1', 'r2']);

    // Existing entries: a backup never reuses one (not even an empty directory); an export
    // replaces only a regular file and only with overwrite.
    mkdirSync(join(exports, 'empty'));
    writeFileSync(join(exports, 'plain'), 'x');
    const conflicts: Array<[string, object]> = [
      ['/v1/admin/widecolumn/backup', { name: 'nightly-2024.01_a' }],
      ['/v1/admin/widecolumn/backup', { name: 'empty' }],
      ['/v1/admin/widecolumn/backup', { name: 'a.parquet' }],
      ['/v1/admin/widecolumn/export', { dataset: 'a', name: 'a.parquet' }],
      ['/v1/admin/widecolumn/export', { dataset: 'a', name: 'nightly-2024.01_a', overwrite: true }],
      ['/v1/admin/widecolumn/export', { dataset: 'a', name: 'empty', overwrite: true }],
    ];
    for (const [url, payload] of conflicts) {
      res = await app.inject({ method: 'POST', url, payload });
      assert.equal(res.statusCode, 409, `${url} ${JSON.stringify(payload)}: ${res.body}`);
      assert.equal(res.json().error.code, 'ALREADY_EXISTS');
    }
    assert.deepEqual(readdirSync(join(exports, 'empty')), [], 'the refused backup wrote nothing into the existing directory');
    res = await app.inject({ method: 'POST', url: '/v1/admin/widecolumn/export', payload: { dataset: 'a', name: 'plain', overwrite: true } });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().cells, 3);
    assert.deepEqual(readdirSync(exports).sort(), ['a.parquet', 'empty', 'nightly-2024.01_a', 'plain']);
    assert.deepEqual(readdirSync(data).sort(), ['widecolumn', 'widecolumn-exports'], 'nothing written beside the export directory');
  } finally {
    await app.close();
    await store.close();
    tmp.cleanup();
  }
});

test('the export directory follows config widecolumn.exportDir (relative to the data directory, or absolute)', async () => {
  const tmp = tempDir();
  try {
    for (const [exportDir, expected] of [['dumps', join(tmp.dir, 'd1', 'dumps')], [join(tmp.dir, 'elsewhere'), join(tmp.dir, 'elsewhere')]] as const) {
      const dataDir = join(tmp.dir, exportDir === 'dumps' ? 'd1' : 'd2');
      const svc = await openWideColumnService({ dataDir, config: { compactionIntervalSeconds: 0, exportDir } });
      assert.equal(svc.exportDir, expected);
      const app = await serve(svc.engine);
      try {
        const res = await app.inject({ method: 'POST', url: '/v1/admin/widecolumn/backup', payload: { name: 'b1' } });
        assert.equal(res.statusCode, 200, res.body);
        assert.equal(res.json().dir, join(expected, 'b1'));
        assert.ok(existsSync(join(expected, 'b1', 'manifest.json')));
        assert.equal(existsSync(join(dataDir, 'widecolumn-exports')), false);
      } finally {
        await app.close();
        await svc.close();
      }
    }
    for (const bad of ['', 'a\0b', 5]) {
      assert.throws(() => parseWideColumnConfig({ exportDir: bad }), (err: unknown) => err instanceof ShardKitError && err.code === 'INVALID_CONFIG');
    }
    // Never the data directory, the store, inside the store or above it: overwrite could replace their files.
    for (const bad of ['.', 'widecolumn', 'widecolumn/x', 'widecolumn/..x', '..', '/', join(tmp.dir, 'd3')]) {
      const dataDir = join(tmp.dir, 'd3');
      await assert.rejects(openWideColumnService({ dataDir, config: { compactionIntervalSeconds: 0, exportDir: bad } }), (err: unknown) => err instanceof ShardKitError && err.code === 'INVALID_CONFIG' && /widecolumn\.exportDir/.test(err.message), bad);
    }
    assert.equal(existsSync(join(tmp.dir, 'd3', 'widecolumn', 'LOCK')), false, 'refused before the store is opened');
  } finally {
    tmp.cleanup();
  }
});

test('resolveExportName: one plain segment inside the root, checked again after resolving', () => {
  const root = join('/srv', 'data', 'widecolumn-exports');
  assert.equal(resolveExportName(root, 'a.parquet', 'export name'), join(root, 'a.parquet'));
  assert.equal(resolveExportName(`${root}/sub/..`, 'B_1-x', 'backup name'), join(root, 'B_1-x'));
  assert.equal(resolveExportName(root, 'x'.repeat(128), 'n'), join(root, 'x'.repeat(128)));
  for (const bad of ['..', '../x', 'a/b', '/x', '', 'x'.repeat(129), 'a\0', 'x.partial', undefined, 5, ['a']]) {
    assert.throws(() => resolveExportName(root, bad, 'backup name'), (err: unknown) => err instanceof ShardKitError && err.code === 'INVALID_ARGUMENT' && /^backup name /.test(err.message), String(bad));
  }
});
