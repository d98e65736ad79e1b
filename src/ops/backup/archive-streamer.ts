import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { processRunning } from '../proc-stat.js';

const PID_FILE = 'streamer.pid';

/**
 * An archiver killed with -9 leaves its tool (mariadb-binlog, pg_receivewal) running, orphaned,
 * still writing into the pair's directory: two writers would corrupt the newest file. The tool's
 * pid is kept in the directory, and the next archiver ends a leftover one before it starts its
 * own (only a process whose command line names the tool and this directory).
 */
export async function endLeftoverStreamer(dir: string, tool: string): Promise<number | undefined> {
  let pid: number;
  try {
    pid = Number(readFileSync(join(dir, PID_FILE), 'utf8').trim());
  } catch {
    return undefined;
  }
  if (!Number.isSafeInteger(pid) || pid <= 0 || !processRunning(pid)) return undefined;
  let cmdline = '';
  try {
    cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return undefined;
  }
  if (!cmdline.includes(tool) || !cmdline.includes(dir)) return undefined;
  process.kill(pid, 'SIGKILL');
  while (processRunning(pid)) await sleep(10);
  return pid;
}

export function recordStreamer(dir: string, pid: number | undefined): void {
  if (pid !== undefined) writeFileSync(join(dir, PID_FILE), `${pid}\n`);
}
