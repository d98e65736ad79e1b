/**
 * The packed package passes publint (every message, suggestions included) and
 * @arethetypeswrong/cli (node16 ESM and CJS, bundlers): scripts/check-package.mjs, also
 * `npm run check:package`. Issue 33 item 3.
 * @integration (scripts/run-tests.mjs): packs the built package and runs both checkers.
 */
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT, ensureBuilt } from '../cli/cli-harness.js';

before(ensureBuilt);

test('publint and arethetypeswrong find nothing in the packed package', () => {
  const res = spawnSync(process.execPath, [join(ROOT, 'scripts', 'check-package.mjs')], { cwd: ROOT, encoding: 'utf8', timeout: 300_000 });
  assert.equal(res.status, 0, `${res.stdout}\n${res.stderr}`);
  assert.match(res.stdout, /publint: 0 message\(s\)/);
  assert.match(res.stdout, /"shardkit\/fastify"/, 'every subpath is checked');
  assert.match(res.stdout, /attw: exit 0/);
});
