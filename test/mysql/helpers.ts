import { execFile, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { CLI, ensureBuilt } from '../cli/cli-harness.js';
import { listeningSockets } from '../net/port-owner.js';
import { processRunning } from '../../src/ops/proc-stat.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
ensureBuilt();

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the real CLI (`shardkit ...`) from source in a child process. */
export function shardkit(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { cwd: ROOT, env: { ...process.env, ...env, NODE_OPTIONS: '' }, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** The plain `mariadb` client over a server's socket (root via unix_socket, no password); tab-separated rows. */
export function mariadbClient(socket: string, sql: string): string[][] {
  const res = spawnSync('mariadb', ['--socket', socket, '--batch', '--skip-column-names', '--raw', '-e', sql], { encoding: 'utf8' });
  if (res.status !== 0) throw new Error(`mariadb client failed: ${res.stderr || res.error?.message}`);
  return res.stdout.split('\n').filter((l) => l !== '').map((l) => l.split('\t'));
}

/** Local addresses of the TCP sockets listening on `port`. */
export function listeningAddresses(port: number): string[] {
  return listeningSockets(port).map((x) => x.address);
}

/** True while `pid` runs (not a zombie). */
export function processAlive(pid: number): boolean {
  return processRunning(pid);
}
