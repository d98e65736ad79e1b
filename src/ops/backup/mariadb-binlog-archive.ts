import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { HostAdmin } from '../failover/host-admin.js';
import { adminQuery } from '../failover/host-admin.js';
import type { BackupUnitSource } from './backup-engine.js';

/** The binlog files archived for one pair, oldest first. */
export function archivedBinlogs(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names.filter((n) => /\.\d{6}$/.test(n)).sort().map((n) => join(dir, n));
}

/**
 * The time (ms, whole seconds) of the newest event the archive of a pair holds, read from its
 * newest non-empty file's event headers; undefined when nothing is archived.
 */
export async function archivedUntil(dir: string): Promise<number | undefined> {
  for (const file of archivedBinlogs(dir).reverse()) {
    const text = await new Promise<string>((resolve) => {
      execFile('mariadb-binlog', ['--base64-output=decode-rows', file], { env: { ...process.env, TZ: 'UTC' }, maxBuffer: 1 << 30 }, (_err, stdout) => resolve(stdout ?? ''));
    });
    let last: number | undefined;
    for (const m of text.matchAll(/^#(\d{2})(\d{2})(\d{2}) +(\d{1,2}):(\d{2}):(\d{2}) server id/gm)) {
      last = Date.UTC(2000 + Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
    }
    if (last !== undefined) return last;
  }
  return undefined;
}

/**
 * Streams one slave's binlog into `dir` (`mariadb-binlog --read-from-remote-server --raw
 * --stop-never`) until `signal` aborts; a stream that ends (the slave restarted, the connection
 * dropped) is started again from the newest archived file, which the raw copy rewrites whole.
 */
export async function archiveBinlogs(admin: HostAdmin, pair: BackupUnitSource, dir: string, signal: AbortSignal, log: (m: string) => void): Promise<void> {
  mkdirSync(dir, { recursive: true });
  while (!signal.aborted) {
    const have = archivedBinlogs(dir);
    let first: string;
    try {
      first = have.length > 0 ? have.at(-1)!.slice(dir.length + 1) : String(((await adminQuery<Array<{ Log_name: string }>>(admin, pair.source, 'SHOW BINARY LOGS'))[0])?.Log_name);
    } catch (err) {
      log(`${pair.source}: ${(err as Error).message}; retrying`);
      await sleep(1000, undefined, { signal }).catch(() => undefined);
      continue;
    }
    const child: ChildProcess = spawn('mariadb-binlog', [...admin.clientArgs(pair.source), '--read-from-remote-server', '--raw', '--stop-never', `--result-file=${dir}/`, first], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    const stop = () => child.kill('SIGTERM');
    signal.addEventListener('abort', stop, { once: true });
    const code = await new Promise<number | string>((r) => child.on('close', (c, s) => r(c ?? s ?? -1)));
    signal.removeEventListener('abort', stop);
    if (signal.aborted) return;
    log(`${pair.source}: mariadb-binlog exited ${code}${err ? `: ${err.trim().split('\n').at(-1)}` : ''}; restarting from ${first}`);
    await sleep(1000, undefined, { signal }).catch(() => undefined);
  }
}
