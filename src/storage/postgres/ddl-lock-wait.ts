import { ExponentialBackoff, handleWhen, retry } from 'cockatiel';
import { ShardKitError, isShardKitError } from '../../errors.js';
import { whereText } from '../sql/error-context.js';
import type { ShardRef } from '../shard-backend.js';

/** One wait of `shardkit init` for a lock another session holds, given up after the lock timeout. */
export interface DdlLockWait {
  host: string;
  shard: number;
  fleet: ShardRef['fleet'];
  /** 1 for the first wait. */
  attempt: number;
  attempts: number;
  lockTimeoutMs: number;
}

export interface DdlLockPolicy {
  lockTimeoutMs: number;
  attempts: number;
  /** Awaited after a wait ended and before the next attempt's backoff (progress lines, tests). */
  onLockWait?: (wait: DdlLockWait) => void | Promise<void>;
}

/** lock_not_available (lock_timeout, or the generator upgrade's own deadline) and deadlock_detected. */
const LOCK_SQLSTATES = new Set(['55P03', '40P01']);

const isLockWait = (err: unknown): boolean => isShardKitError(err) && LOCK_SQLSTATES.has(String(err.details?.driverCode));

/**
 * Shard DDL under load (a generator upgrade waits for every transaction that called the old
 * next_id(); CREATE INDEX IF NOT EXISTS waits for writers of its table) must neither hang nor end
 * in SHARD_UNAVAILABLE for a live shard. Each attempt's transaction waits at most lockTimeoutMs
 * for a lock (SET LOCAL lock_timeout, under the statement timeout so that never fires first),
 * then rolls back, releasing what it holds so no writer waits behind it, and runs again after a
 * backoff. After `attempts` waits: LOCK_TIMEOUT (503, retryable), nothing changed.
 */
export async function withDdlLockWait(ref: ShardRef, policy: DdlLockPolicy, attempt: () => Promise<void>): Promise<void> {
  const retries = retry(handleWhen(isLockWait), {
    maxAttempts: policy.attempts - 1,
    backoff: new ExponentialBackoff({ initialDelay: 50, maxDelay: 2_000 }),
  });
  try {
    await retries.execute(async ({ attempt: n }) => {
      try {
        await attempt();
      } catch (err) {
        if (isLockWait(err)) await policy.onLockWait?.({ host: ref.host, shard: ref.shard, fleet: ref.fleet, attempt: n + 1, attempts: policy.attempts, lockTimeoutMs: policy.lockTimeoutMs });
        throw err;
      }
    });
  } catch (err) {
    if (!isLockWait(err)) throw err;
    throw new ShardKitError('LOCK_TIMEOUT', `${whereText(ref)}: another session held a lock the schema change needs through ${policy.attempts} waits of ${policy.lockTimeoutMs} ms (a long transaction on the shard's tables or its next_id()); nothing was changed: run the command again once it ends`, {
      cause: err,
      details: { ...(err as ShardKitError).details, attempts: policy.attempts, lockTimeoutMs: policy.lockTimeoutMs },
    });
  }
}
