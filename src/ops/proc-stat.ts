import { readFileSync } from 'node:fs';

/** What the dev servers' process handling reads from /proc/<pid>/stat (Linux). */
export interface ProcStat {
  /** R, S, D, T (stopped), Z (zombie), X (dead) ... */
  state: string;
  ppid: number;
}

/** /proc/<pid>/stat of a process, or undefined when it is gone. */
export function procStat(pid: number): ProcStat | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may hold spaces or ')': fields after the last ')'.
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { state: rest[0]!, ppid: Number(rest[1]) };
}

/**
 * True while `pid` runs: it exists and is neither a zombie nor dead. A killed child of this
 * process stays a zombie until reaped, and that is not running.
 */
export function processRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  const st = procStat(pid);
  return st !== undefined && st.state !== 'Z' && st.state !== 'X';
}
