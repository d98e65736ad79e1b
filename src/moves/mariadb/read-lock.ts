import { setTimeout as sleep } from 'node:timers/promises';
import { ShardKitError } from '../../errors.js';
import type { Conn } from './names.js';

/**
 * The longest a parallel copy holds FLUSH TABLES WITH READ LOCK on a server. The lock stops every
 * write there, and a copy reads from the source's master when its slave does not replicate: the
 * snapshots open in milliseconds, so a wait this long means something is wrong, never a reason to
 * keep every write of the pair waiting (a review saw a stalled copy hold it for 12 minutes).
 */
export const READ_LOCK_MAX_MS = 10_000;

/** FLUSH TABLES WITH READ LOCK, giving up after `maxMs` if running statements keep it waiting (it blocks new writes meanwhile). */
export async function takeReadLock(lock: Conn, maxMs: number): Promise<void> {
  await lock.query(`SET SESSION lock_wait_timeout = ${Math.max(1, Math.ceil(maxMs / 1000))}`);
  await lock.query('FLUSH TABLES WITH READ LOCK');
}

/** `opened`, or SHARD_UNAVAILABLE once the lock has been held `maxMs`: the caller stops the copy and releases the lock. */
export async function openedUnderLock<T>(from: string, opened: Promise<T>, maxMs: number): Promise<T> {
  const giveUp = new AbortController();
  try {
    return await Promise.race([
      opened,
      sleep(maxMs, undefined, { signal: giveUp.signal }).then(() => {
        throw new ShardKitError('SHARD_UNAVAILABLE', `the copy's snapshots of ${from} did not open within ${maxMs} ms of FLUSH TABLES WITH READ LOCK, which stops every write there: the lock is released and the copy stopped; run the move again (shards move --resume) or abort it`);
      }),
    ]);
  } finally {
    giveUp.abort();
  }
}

/** Resolves after `maxMs` of lock (or never, for a copy without one): a parallel dump lets the lock go then and checks its positions after. */
export function lockBudget(maxMs: number): Promise<void> {
  return sleep(maxMs, undefined, { ref: false });
}
