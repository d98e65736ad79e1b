/**
 * A command whose modules import an optional peer dependency (the moves and the server admin
 * import pg or mysql2 at load) reports a missing one as the backends do: one line,
 * `MISSING_DEPENDENCY` naming the package, exit 1; any other missing module stays what it is.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { ROOT } from './cli-harness.js';

function failWith(message: string, code: string): { status: number | null; stderr: string } {
  const script = `import { fail } from './src/cli/run-action.ts';\nconst err = new Error(${JSON.stringify(message)});\nerr.code = ${JSON.stringify(code)};\nfail(err);\n`;
  return spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' });
}

test('a command that cannot load an optional driver names the package to install', () => {
  const res = failWith("Cannot find package 'pg' imported from /app/node_modules/shardkit/dist/moves/postgres/engine-base.js", 'ERR_MODULE_NOT_FOUND');
  assert.equal(res.status, 1);
  assert.equal(res.stderr.trim(), 'shardkit: MISSING_DEPENDENCY: this command needs the npm package pg, which is not installed: npm install pg');
  const sub = failWith("Cannot find module 'mysql2/promise'", 'MODULE_NOT_FOUND');
  assert.match(sub.stderr, /needs the npm package mysql2, which is not installed: npm install mysql2$/m);
});

test('a missing file of our own is not mistaken for a package', () => {
  const res = failWith("Cannot find module '/app/dist/cli/actions/gone.js' imported from /app/dist/cli/main.js", 'ERR_MODULE_NOT_FOUND');
  assert.equal(res.status, 1);
  assert.match(res.stderr, /^shardkit: error: Cannot find module/);
});
