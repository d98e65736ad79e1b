import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { HostAdmin } from '../failover/host-admin.js';
import { adminQuery } from '../failover/host-admin.js';
import { endLeftoverStreamer, recordStreamer } from './archive-streamer.js';
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
    const leftover = await endLeftoverStreamer(dir, 'mariadb-binlog');
    if (leftover !== undefined) log(`${pair.source}: ended mariadb-binlog ${leftover} left by a killed archiver`);
    const child: ChildProcess = spawn('mariadb-binlog', [...admin.clientArgs(pair.source), '--read-from-remote-server', '--raw', '--stop-never', `--result-file=${dir}/`, first], { stdio: ['ignore', 'ignore', 'pipe'] });
    recordStreamer(dir, child.pid);
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

/** `0-1-12,1-1-5` (a GTID list or position) as domain -> sequence number. */
export function gtidSeqs(list: string): Map<string, bigint> {
  const out = new Map<string, bigint>();
  for (const g of list.split(',').map((x) => x.trim()).filter((x) => x !== '')) {
    const [domain, , seq] = g.split('-');
    if (domain !== undefined && seq !== undefined && /^\d+$/.test(seq)) out.set(domain, BigInt(seq));
  }
  return out;
}

/** Whether every transaction before a binlog file's start list `fileStart` is at or before `position` (so the files before it hold nothing after `position`). */
export function startsAtOrBefore(fileStart: Map<string, bigint>, position: Map<string, bigint>): boolean {
  for (const [domain, seq] of fileStart) if (seq > (position.get(domain) ?? -1n)) return false;
  return true;
}

/** The GTID list a binlog file starts with (its Gtid_list event: every transaction in earlier files). */
export async function fileStartList(file: string): Promise<Map<string, bigint> | undefined> {
  const text = await new Promise<string>((resolve) => {
    execFile('mariadb-binlog', ['--stop-position=4096', file], { env: { ...process.env, TZ: 'UTC' }, maxBuffer: 1 << 24 }, (_err, stdout) => resolve(stdout ?? ''));
  });
  const m = /\tGtid list \[([^\]]*)\]/.exec(text);
  return m ? gtidSeqs(m[1]!) : undefined;
}

/**
 * Removes the archived binlog files that a replay from none of `positions` needs: file i goes
 * when file i+1 starts at or before every position (the replay starts in a later file). The
 * newest file always stays. Returns the names removed.
 */
export async function pruneBinlogs(dir: string, positions: string[]): Promise<string[]> {
  const files = archivedBinlogs(dir);
  const wanted = positions.map(gtidSeqs);
  const removed: string[] = [];
  for (let i = 0; i + 1 < files.length; i++) {
    const next = await fileStartList(files[i + 1]!);
    if (next === undefined || !wanted.every((p) => startsAtOrBefore(next, p))) break;
    rmSync(files[i]!, { force: true });
    removed.push(files[i]!.slice(dir.length + 1));
  }
  return removed;
}
