/**
 * Database drivers and heavy features are optional peer dependencies (issue 33 item 2): a
 * consumer that installed only shardkit's `dependencies` (no pg, mysql2, ioredis, memjs, etcd3,
 * rocksdb-native, parquetjs, hyparquet-writer) imports every entry it uses, runs objects on the embedded SQLite
 * default, and gets MISSING_DEPENDENCY naming the package when its config asks for a driver it
 * lacks. And `shardkit/kit` / `shardkit/ids` load no driver at all until one is used.
 * @integration (scripts/run-tests.mjs): child processes that load the built package.
 */
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ROOT, ensureBuilt } from '../cli/cli-harness.js';

before(ensureBuilt);

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
};
const DRIVERS = ['pg', 'mysql2', 'ioredis', 'memjs', 'etcd3', 'rocksdb-native', '@dsnp/parquetjs', 'hyparquet-writer'];

function run(dir: string, file: string, code: string): { status: number | null; stdout: string; stderr: string } {
  writeFileSync(join(dir, file), code);
  return spawnSync(process.execPath, ['--no-warnings', file], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
}

test('the drivers are optional peer dependencies, not dependencies', () => {
  for (const name of DRIVERS) {
    assert.equal(pkg.dependencies[name], undefined, `${name} is not a dependency`);
    assert.ok(pkg.peerDependencies[name], `${name} is a peer dependency`);
    assert.equal(pkg.peerDependenciesMeta[name]?.optional, true, `${name} is optional`);
  }
});

test('a consumer with only the dependencies installed runs objects on SQLite and is told which driver a postgres config needs', () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-no-peers-'));
  try {
    // A copy, not a link: a link's real path would find the repository's node_modules (and its pg).
    const installed = join(dir, 'node_modules', 'shardkit');
    mkdirSync(installed, { recursive: true });
    cpSync(join(ROOT, 'dist'), join(installed, 'dist'), { recursive: true });
    cpSync(join(ROOT, 'package.json'), join(installed, 'package.json'));
    for (const name of Object.keys(pkg.dependencies)) {
      mkdirSync(dirname(join(dir, 'node_modules', name)), { recursive: true });
      symlinkSync(join(ROOT, 'node_modules', name), join(dir, 'node_modules', name), 'dir');
    }
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    const res = run(dir, 'app.mjs', `
import { ShardKit, defaultConfig, isShardKitError } from 'shardkit';
import 'shardkit/kit';
import 'shardkit/ids';
import 'shardkit/http';
for (const name of ${JSON.stringify(DRIVERS)}) {
  try { await import(name); throw new Error(name + ' is installed here: the test proves nothing'); } catch (err) { if (err.code !== 'ERR_MODULE_NOT_FOUND') throw err; }
}
const kit = await ShardKit.open({ config: defaultConfig({ shards: 16 }), dataDir: './data' });
const o = await kit.objects.create('user', { name: 'ada' });
const back = await kit.objects.get(o.id);
if (back?.data.name !== 'ada') throw new Error('read back ' + JSON.stringify(back?.data));
await kit.close();
const pgConfig = { ...defaultConfig({ shards: 16 }), storage: { backend: 'postgres' } };
try {
  await ShardKit.open({ config: pgConfig, dataDir: './data-pg' });
  throw new Error('opened a postgres config without pg');
} catch (err) {
  if (!isShardKitError(err, 'MISSING_DEPENDENCY')) throw err;
  console.log(err.message);
}
console.log('ok');
`);
    assert.equal(res.status, 0, res.stderr);
    assert.match(res.stdout, /the PostgreSQL backend needs the npm package pg, which is not installed: npm install pg/);
    assert.match(res.stdout, /^ok$/m);
    // Its types compile strictly without skipLibCheck: no published d.ts needs a driver's types.
    mkdirSync(join(dir, 'node_modules', '@types'), { recursive: true });
    symlinkSync(join(ROOT, 'node_modules', '@types', 'node'), join(dir, 'node_modules', '@types', 'node'), 'dir');
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, skipLibCheck: false, noEmit: true, types: ['node'] }, files: ['types.ts'] }));
    writeFileSync(join(dir, 'types.ts'), "import * as all from 'shardkit';\nimport { ShardKit } from 'shardkit/kit';\nimport { shardkitRoutes } from 'shardkit/fastify';\nexport const used = [all, ShardKit, shardkitRoutes];\n");
    const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
    assert.equal(tsc.status, 0, `tsc without the optional peers:\n${tsc.stdout}${tsc.stderr}`);
    // The CLI says the same in one line, exit 1, no stack.
    writeFileSync(join(dir, 'pg.json'), JSON.stringify({ ...JSON.parse(run(dir, 'cfg.mjs', "import { defaultConfig } from 'shardkit'; console.log(JSON.stringify(defaultConfig({ shards: 16 })));").stdout), storage: { backend: 'postgres' } }));
    const cli = spawnSync(process.execPath, [join(installed, 'dist', 'cli', 'main.js'), 'init', '--config', 'pg.json'], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
    assert.equal(cli.status, 1, cli.stderr);
    assert.equal(cli.stderr.trim(), 'shardkit: MISSING_DEPENDENCY: the PostgreSQL backend needs the npm package pg, which is not installed: npm install pg');
    // The MariaDB dev cluster's commands (mysql2 installed, as they need) do not load pg (its module graph imported the PostgreSQL
    // dev server's, which imported pg, so `dev up` of MariaDB asked for pg).
    symlinkSync(join(ROOT, 'node_modules', 'mysql2'), join(dir, 'node_modules', 'mysql2'), 'dir');
    const dev = spawnSync(process.execPath, [join(installed, 'dist', 'cli', 'main.js'), 'dev', 'status', '--dir', 'nothing'], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
    assert.match(dev.stderr.trim(), /^shardkit: NOT_FOUND: no dev cluster in /, dev.stderr);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('importing shardkit/kit or shardkit/ids loads no database driver, native module or server framework', () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-light-'));
  try {
    mkdirSync(join(dir, 'node_modules'), { recursive: true });
    symlinkSync(ROOT, join(dir, 'node_modules', 'shardkit'), 'dir');
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    for (const entry of ['shardkit/kit', 'shardkit/ids']) {
      // CommonJS packages (every driver) show in require.cache once loaded, whoever imported them.
      const res = run(dir, 'probe.mjs', `
import { createRequire } from 'node:module';
await import('${entry}');
const loaded = Object.keys(createRequire(import.meta.url).cache).map((f) => /node_modules\\/((?:@[^/]+\\/)?[^/]+)/.exec(f)?.[1]).filter(Boolean);
console.log(JSON.stringify([...new Set(loaded)]));
`);
      assert.equal(res.status, 0, res.stderr);
      const loaded = JSON.parse(res.stdout) as string[];
      for (const heavy of [...DRIVERS, 'better-sqlite3', 'fastify', 'prom-client']) assert.ok(!loaded.includes(heavy), `${entry} loaded ${heavy} (${loaded.join(', ')})`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
