/** What the backup tests share: waiting for a condition, and counting which acknowledged objects a kit can read. */
import { setTimeout as sleep } from 'node:timers/promises';
import { isShardKitError } from '../../src/errors.js';
import type { ShardKit } from '../../src/kit/shard-kit.js';

/** Resolves once `check` holds (no fixed sleep: the machine may be slow); throws naming `what` after `timeoutMs`. */
export async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** How many of `ids` the kit reads back (NOT_FOUND counts as absent; any other error is thrown). */
export async function present(kit: ShardKit, ids: bigint[]): Promise<number> {
  let n = 0;
  for (const id of ids) {
    try {
      await kit.objects.get(id);
      n++;
    } catch (err) {
      if (!isShardKitError(err, 'NOT_FOUND')) throw err;
    }
  }
  return n;
}
