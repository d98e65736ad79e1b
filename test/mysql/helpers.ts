import { execFile, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { CLI, ensureBuilt } from '../cli/cli-harness.js';

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

/** Local addresses of the TCP sockets listening on `port` (from /proc/net/tcp and tcp6). */
export function listeningAddresses(port: number): string[] {
  const out: string[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length < 4 || cols[3] !== '0A') continue; // 0A = LISTEN
      const [addr, portHex] = cols[1]!.split(':');
      if (parseInt(portHex!, 16) !== port) continue;
      out.push(addr!.length === 8 ? addr!.match(/../g)!.reverse().map((h) => parseInt(h, 16)).join('.') : `ipv6:${addr}`);
    }
  }
  return out;
}

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true;
  }
}
