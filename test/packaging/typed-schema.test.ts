/**
 * examples/typed-schema/typed-schema.ts, as a consumer of the built package would build it:
 * strict with noUncheckedIndexedAccess, exactOptionalPropertyTypes and without skipLibCheck, it
 * compiles and runs (on the embedded default); the same file with a misspelled type name ('usr')
 * or mapping name does not compile, and data of the wrong shape does not either.
 * @integration (scripts/run-tests.mjs): runs tsc over the published types (~6 s of CPU per run).
 */
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, ensureBuilt } from '../cli/cli-harness.js';

before(ensureBuilt);

const EXAMPLE = readFileSync(join(ROOT, 'examples', 'typed-schema', 'typed-schema.ts'), 'utf8');

/** Compiles `source` as a consumer project's index.ts; returns tsc's result and the project dir. */
function compile(source: string): { status: number | null; out: string; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-typed-'));
  mkdirSync(join(dir, 'node_modules', '@types'), { recursive: true });
  symlinkSync(ROOT, join(dir, 'node_modules', 'shardkit'), 'dir');
  symlinkSync(join(ROOT, 'node_modules', '@types', 'node'), join(dir, 'node_modules', '@types', 'node'), 'dir');
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noUncheckedIndexedAccess: true,
      exactOptionalPropertyTypes: true, skipLibCheck: false, outDir: 'out', types: ['node'],
    },
    files: ['index.ts'],
  }));
  writeFileSync(join(dir, 'index.ts'), source);
  const res = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
  return { status: res.status, out: `${res.stdout}${res.stderr}`, dir };
}

test('the typed example compiles under strict settings and runs', () => {
  const { status, out, dir } = compile(EXAMPLE);
  try {
    assert.equal(status, 0, out);
    const run = spawnSync(process.execPath, [join(dir, 'out', 'index.js'), join(dir, 'data')], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout, /^user ann <ann@example\.com>$/m);
    assert.match(run.stdout, /^pin \d+: sourdough$/m);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a misspelled type or mapping name, or data of the wrong shape, is a compile error', () => {
  const cases: Array<[string, string, RegExp]> = [
    ["kit.objects.create('user', { username: 'ann'", "kit.objects.create('usr', { username: 'ann'", /'"usr"'/],
    ["kit.mappings.add('board_has_pins'", "kit.mappings.add('board_has_pin'", /'"board_has_pin"'/],
    ["{ details: 'sourdough' }", "{ detail: 'sourdough' }", /detail/],
  ];
  for (const [from, to, message] of cases) {
    assert.ok(EXAMPLE.includes(from), from);
    const { status, out, dir } = compile(EXAMPLE.replace(from, to));
    rmSync(dir, { recursive: true, force: true });
    assert.notEqual(status, 0, `${to} compiled`);
    assert.match(out, /error TS2345|error TS2353|error TS2561/, out);
    assert.match(out, message, out);
  }
});
