import { lockBudget, READ_LOCK_MAX_MS, takeReadLock } from './read-lock.js';
import { ShardKitError } from '../../errors.js';
import type { TableProgress } from '../move-engine.js';
import { dumpCopy, type DumpAdmin, type DumpCopyOptions } from './dump-copy.js';

/**
 * dumpCopy in `streams` dumps at once (databases dealt out round-robin), all from one consistent
 * point: a FLUSH TABLES WITH READ LOCK is held on `from` (a move copies from the source's slave
 * where it can, so the master's writes never wait) until every dump has opened its snapshot,
 * then released; the dumps run on side by side, each into every host of `to`. The loaders and the
 * dumps' processes are spawned before the lock (dumpCopy's `startAfter`): the slave's SQL thread
 * waits while it is held, and at thousands of writes a second each millisecond is source lag.
 * The dumps' GTID positions must be equal (no commit can have happened between their
 * snapshots), else the copy fails. Returns that position.
 */
export async function parallelDumpCopy(admin: DumpAdmin, from: string, to: string | readonly string[], databases: string[], streams: number, options: DumpCopyOptions = {}): Promise<string> {
  const groups = Array.from({ length: Math.max(1, Math.min(streams, databases.length)) }, (_, i) => databases.filter((_, j) => j % Math.max(1, Math.min(streams, databases.length)) === i));
  if (groups.length <= 1) return dumpCopy(admin, from, to, databases, options);
  const lock = await admin.connect(from);
  let locked = false;
  try {
    let opened = 0;
    let allOpen!: () => void;
    const snapshots = new Promise<void>((resolve) => (allOpen = resolve));
    const bytes = groups.map(() => 0);
    const rows = groups.map(() => 0);
    const tables = groups.map((): TableProgress[] => []);
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    let lockTaken!: () => void;
    let lockFailed!: (e: unknown) => void;
    const startAfter = new Promise<void>((resolve, reject) => {
      lockTaken = resolve;
      lockFailed = reject;
    });
    const runs = groups.map((dbs, i) => dumpCopy(admin, from, to, dbs, {
      startAfter,
      ...(options.ignoreTables !== undefined ? { ignoreTables: options.ignoreTables } : {}),
      ...(options.throttle !== undefined ? { throttle: options.throttle } : {}),
      ...(options.onBytes !== undefined ? { onBytes: (b: number, r: number, t: TableProgress[]) => { bytes[i] = b; rows[i] = r; tables[i] = t; options.onBytes!(sum(bytes), sum(rows), tables.flat()); } } : {}),
      onSnapshot: () => {
        if (++opened === groups.length) allOpen();
      },
    }));
    // The loaders are spawned by now (dumpCopy's synchronous start): only the dumps start under the lock.
    const lockMs = options.readLockMaxMs ?? READ_LOCK_MAX_MS;
    try {
      await takeReadLock(lock, lockMs);
      locked = true;
    } catch (e) {
      lockFailed(e);
      await Promise.allSettled(runs);
      throw e;
    }
    lockTaken();
    // A dump that fails before its snapshot must not keep the lock held: the lock goes then too,
    // and after its budget (the dumps go on: snapshots opened after it saw different positions,
    // unless nothing was written meanwhile, and the check below fails the copy then).
    await Promise.race([snapshots, lockBudget(lockMs), Promise.any(runs.map((r) => r.then(() => new Promise<never>(() => undefined), () => undefined)))]);
    await lock.query('UNLOCK TABLES');
    locked = false;
    const settled = await Promise.allSettled(runs);
    const failed = settled.find((x) => x.status === 'rejected');
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
    const positions = settled.map((x) => (x as PromiseFulfilledResult<string>).value);
    if (new Set(positions).size > 1) throw new ShardKitError('INTERNAL', `the ${groups.length} parallel dumps of ${from} saw different GTID positions (${positions.join(' / ')}): not one consistent point`);
    return positions[0]!;
  } finally {
    if (locked) await lock.query('UNLOCK TABLES').catch(() => undefined);
    await lock.end().catch(() => lock.destroy());
  }
}
