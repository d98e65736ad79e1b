import { execFile, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

function newestSourceMs(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSourceMs(p) : statSync(p).mtimeMs);
  }
  return newest;
}

/**
 * scripts/run-tests.mjs builds before it runs anything; a test file run on its own (node --test)
 * builds here when dist/ is missing or older than src/, so a CLI test never runs stale code.
 */
export function ensureBuilt(): void {
  if (existsSync(CLI) && statSync(CLI).mtimeMs >= newestSourceMs(join(ROOT, 'src'))) return;
  const res = spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'inherit' });
  assert.equal(res.status, 0, 'npm run build failed');
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function cli(args: string[]): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { cwd: ROOT, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** Bad input: exit 2, nothing on stdout, exactly one line on stderr, no stack trace. */
export function assertBadInput(r: CliResult, what: string, pattern?: RegExp): void {
  assert.equal(r.code, 2, `${what}: exit code ${r.code}, stderr ${JSON.stringify(r.stderr)}`);
  assert.equal(r.stdout, '', `${what}: printed ${JSON.stringify(r.stdout)}`);
  const lines = r.stderr.split('\n').filter((l) => l !== '');
  assert.equal(lines.length, 1, `${what}: stderr should be one line, got ${JSON.stringify(r.stderr)}`);
  assert.doesNotMatch(r.stderr, /\n\s+at /, `${what}: stack trace on stderr`);
  if (pattern) assert.match(lines[0]!, pattern, what);
}
