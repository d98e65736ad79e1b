import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { ShardKitError } from '../../errors.js';
import { processRunning } from '../proc-stat.js';

/**
 * Exactly one supervisor acts: the one holding this lock file (beside the config). A lock left by
 * a process that died (kill -9) is taken over; one held by a live process makes the next
 * supervisor refuse to start. One machine only: supervisors on several machines need a lease in
 * etcd, which is not built yet (docs/failover.md).
 */
export function acquireHealLock(path: string): () => void {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o600);
      writeSync(fd, JSON.stringify({ pid: process.pid, at: new Date().toISOString() }));
      closeSync(fd);
      return () => rmSync(path, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      let holder: number | undefined;
      try {
        holder = (JSON.parse(readFileSync(path, 'utf8')) as { pid?: number }).pid;
      } catch {
        holder = undefined;
      }
      if (holder !== undefined && holder !== process.pid && processRunning(holder)) {
        throw new ShardKitError('PRECONDITION_FAILED', `another shardkit heal (pid ${holder}) holds ${path}: only one supervisor acts`);
      }
      rmSync(path, { force: true });
    }
  }
  throw new ShardKitError('PRECONDITION_FAILED', `could not take ${path}`);
}
