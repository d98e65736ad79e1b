import { execFile, spawnSync } from 'node:child_process';
import { AsyncLocalStorage } from 'node:async_hooks';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
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
 * For the tests that run the built binary (cliProcess, spawn): scripts/run-tests.mjs builds when
 * dist/ is older than src/; a test file run on its own (node --test) builds here, so a test never
 * runs stale code. cli() needs no build: it runs src/ in this process.
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

/** The built binary in a new Node process: for what only a real process shows (exit, pipes, signals). */
export function cliProcess(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { cwd: ROOT, timeout: 60_000, env: { ...process.env, NODE_OPTIONS: '', ...env } }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

// ---- In-process runs -------------------------------------------------------------------------
// A command line costs ~0.3 s of CPU as a new Node process and a few ms here: the unit tests run
// hundreds of them. The command runs src/cli/program.ts's runCli as the binary does; while it
// runs, process.stdout/stderr writes made on its behalf (found through an AsyncLocalStorage, so
// the test runner's own output is untouched) are captured, and process.exit ends the command
// with that code (a thrown CliExit; what a dead process would still print is dropped).
// test/cli/real-binary.test.ts checks the same outcomes through the built binary.

interface Run {
  stdout: string;
  stderr: string;
  exit: number | undefined;
}

class CliExit extends Error {
  constructor(readonly code: number) {
    super(`process.exit(${code})`);
  }
}

const current = new AsyncLocalStorage<Run>();
let installed = false;

function capture(stream: NodeJS.WriteStream, key: 'stdout' | 'stderr'): void {
  const original = stream.write;
  stream.write = function write(this: NodeJS.WriteStream, chunk: unknown, ...rest: unknown[]): boolean {
    const run = current.getStore();
    if (!run) return (original as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
    if (run.exit === undefined) run[key] += typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8');
    const done = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
    if (done) process.nextTick(done);
    return true;
  } as typeof stream.write;
}

function install(): void {
  if (installed) return;
  installed = true;
  capture(process.stdout, 'stdout');
  capture(process.stderr, 'stderr');
  const exit = process.exit.bind(process);
  process.exit = ((code?: number | string | null) => {
    const run = current.getStore();
    if (!run) return exit(code);
    run.exit ??= Number(code ?? 0);
    throw new CliExit(run.exit);
  }) as typeof process.exit;
}

// process.exitCode is one value per process (and not configurable): one command runs at a time.
let queue: Promise<unknown> = Promise.resolve();

/**
 * `shardkit <args>` run in this process (from src/); the outcome the binary would have. `env`
 * holds variables set for the command only (process.env is restored when it ends).
 */
export function cli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  // Relative paths in args mean what they mean to the binary run from the repository root.
  if (resolve(process.cwd()) !== resolve(ROOT)) {
    ensureBuilt();
    return cliProcess(args, env);
  }
  install();
  const result = queue.then(async () => {
    const { runCli } = await import('../../src/cli/program.js');
    const run: Run = { stdout: '', stderr: '', exit: undefined };
    const before = process.exitCode;
    const envBefore = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
    process.exitCode = undefined;
    Object.assign(process.env, env);
    try {
      await current.run(run, () => runCli([process.execPath, CLI, ...args]));
    } catch (err) {
      if (!(err instanceof CliExit)) throw err;
    } finally {
      for (const [k, v] of Object.entries(envBefore)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
    const code = run.exit ?? Number(process.exitCode ?? 0);
    process.exitCode = before;
    return { code, stdout: run.stdout, stderr: run.stderr };
  });
  queue = result.catch(() => undefined);
  return result;
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
