/**
 * A TypeScript consumer of the built package, strict, moduleResolution nodenext and *without*
 * skipLibCheck, compiles: what we publish in dist/*.d.ts type-checks on its own (rocksdb-native
 * and parquetjs ship no usable types, so none of ours may leak them).
 * @integration (scripts/run-tests.mjs: in `npm test`, not `npm run test:unit`): a packaging check
 * that runs tsc over dist/*.d.ts (~6 s of CPU), not a unit test.
 */
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, ensureBuilt } from '../cli/cli-harness.js';

before(ensureBuilt);

// Bundler resolution (Vite, esbuild, webpack projects) reads a CommonJS dependency's default
// import as its value only: a declaration naming the dependency's namespace through it failed there.
for (const [name, resolution] of [['nodenext', { module: 'NodeNext', moduleResolution: 'NodeNext' }], ['bundler', { module: 'ESNext', moduleResolution: 'Bundler' }]] as const) {
test(`a strict consumer without skipLibCheck compiles against dist/*.d.ts (moduleResolution ${name})`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-consumer-'));
  try {
    // Outside the repository: the package is reached through node_modules like an installed one.
    mkdirSync(join(dir, 'node_modules', '@types'), { recursive: true });
    symlinkSync(ROOT, join(dir, 'node_modules', 'shardkit'), 'dir');
    symlinkSync(join(ROOT, 'node_modules', '@types', 'node'), join(dir, 'node_modules', '@types', 'node'), 'dir');
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { target: 'ES2022', ...resolution, strict: true, skipLibCheck: false, noEmit: true, types: ['node'] },
      files: ['index.ts'],
    }));
    writeFileSync(join(dir, 'index.ts'), [
      "import * as shardkit from 'shardkit';",
      "import * as ids from 'shardkit/ids';",
      "import * as http from 'shardkit/http';",
      "import { WideColumnStore, ShardKitError, buildApp } from 'shardkit';",
      'export const open: (path: string) => Promise<WideColumnStore> = (p) => WideColumnStore.open(p);',
      'export const all = [shardkit, ids, http, ShardKitError, buildApp];',
      '',
    ].join('\n'));
    const res = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
    assert.equal(res.status, 0, `tsc found errors in what we publish:\n${res.stdout}${res.stderr}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
}
