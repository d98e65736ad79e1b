/**
 * The package as a consumer loads it, through node_modules: every subpath of `exports` imports
 * from ESM and from CommonJS (require(esm), Node >= 20.19: the `default` condition), the version
 * is package.json's, and the packed file list carries no source maps pointing at an unshipped src/.
 * @integration (scripts/run-tests.mjs): child processes that load the built package.
 */
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, ensureBuilt } from '../cli/cli-harness.js';

before(ensureBuilt);

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string; exports: Record<string, unknown> };
const subpaths = Object.keys(pkg.exports).filter((k) => k !== './package.json').map((k) => (k === '.' ? 'shardkit' : `shardkit/${k.slice(2)}`));

function consumer(): string {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-consumer-rt-'));
  mkdirSync(join(dir, 'node_modules'), { recursive: true });
  symlinkSync(ROOT, join(dir, 'node_modules', 'shardkit'), 'dir');
  return dir;
}

test('every subpath loads with import and with require; the root exports ShardKit; --version is package.json\'s', () => {
  const dir = consumer();
  try {
    assert.ok(subpaths.includes('shardkit/kit') && subpaths.includes('shardkit/sqlite'), subpaths.join(' '));
    writeFileSync(join(dir, 'esm.mjs'), `for (const p of ${JSON.stringify(subpaths)}) { const m = await import(p); if (Object.keys(m).length === 0) throw new Error(p + ' exports nothing'); }\nconst { ShardKit } = await import('shardkit');\nif (typeof ShardKit.open !== 'function') throw new Error('no ShardKit.open');\nconsole.log('esm ok');\n`);
    writeFileSync(join(dir, 'cjs.cjs'), `for (const p of ${JSON.stringify(subpaths)}) { const m = require(p); if (Object.keys(m).length === 0) throw new Error(p + ' exports nothing'); }\nconst { ShardKit } = require('shardkit/kit');\nif (typeof ShardKit.open !== 'function') throw new Error('no ShardKit.open');\nconsole.log('cjs ok');\n`);
    for (const file of ['esm.mjs', 'cjs.cjs']) {
      const res = spawnSync(process.execPath, ['--no-warnings', file], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
      assert.equal(res.status, 0, `${file}: ${res.stderr}`);
      assert.match(res.stdout, /ok/);
    }
    const v = spawnSync(process.execPath, [join(ROOT, 'dist', 'cli', 'main.js'), '--version'], { encoding: 'utf8' });
    assert.equal(v.stdout.trim(), pkg.version);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the packed file list has the built code and no source maps', () => {
  const res = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
  assert.equal(res.status, 0, res.stderr);
  const files = (JSON.parse(res.stdout) as Array<{ files: Array<{ path: string }> }>)[0]!.files.map((f) => f.path);
  assert.ok(files.includes('dist/index.js') && files.includes('dist/kit/index.d.ts'));
  assert.deepEqual(files.filter((f) => f.endsWith('.map')), []);
});
