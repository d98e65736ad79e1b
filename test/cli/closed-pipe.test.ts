/**
 * `shardkit openapi | head -1`: a reader that closes its end early must not make the CLI print
 * an EPIPE stack trace; it stops quietly with exit 0. Runs the built CLI in a shell pipeline:
 * a real pipe (a Node child's stdout is a socket with a buffer large enough to hide the bug).
 * @integration (scripts/run-tests.mjs: in `npm test`, not `npm run test:unit`): shell pipelines of
 * the built binary (~5 s of CPU in child processes).
 */
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { CLI, ROOT, ensureBuilt } from './cli-harness.js';

before(ensureBuilt);

/** Runs `shardkit <args> | <reader>`; the CLI's exit code comes back on the last stderr line. */
function pipeInto(args: string, reader: string): { stdout: string; stderr: string; cliExit: number } {
  const script = `"${process.execPath}" "${CLI}" ${args} | ${reader}; echo "cli exit \${PIPESTATUS[0]}" >&2`;
  const res = spawnSync('bash', ['-c', script], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
  const lines = res.stderr.trimEnd().split('\n');
  const m = /^cli exit (\d+)$/.exec(lines.pop() ?? '');
  assert.ok(m, `no exit status in ${JSON.stringify(res.stderr)}`);
  return { stdout: res.stdout, stderr: lines.join('\n'), cliExit: Number(m[1]) };
}

test('`shardkit openapi | head -1` prints one line; the CLI exits 0 without a stack trace', () => {
  // The document (~100 KB) is larger than a pipe's 64 KB buffer: the CLI is still writing when head exits.
  const r = pipeInto('openapi', 'head -1');
  assert.equal(r.stdout, '{\n');
  assert.equal(r.stderr, '', 'nothing on stderr (no EPIPE stack trace)');
  assert.equal(r.cliExit, 0);
});

test('a reader that never reads (`| true`) and one that stops after 10 bytes: exit 0, quiet', () => {
  for (const reader of ['true', 'head -c 10']) {
    const r = pipeInto('openapi', reader);
    assert.equal(r.stderr, '', `${reader}: nothing on stderr`);
    assert.equal(r.cliExit, 0, reader);
  }
});

test('errors still exit non-zero with their one line when stdout is a closed pipe', () => {
  const r = pipeInto('id decode abc', 'true');
  assert.equal(r.cliExit, 2);
  assert.match(r.stderr, /^shardkit: INVALID_ID: /);
  assert.equal(r.stderr.split('\n').length, 1);
});
