import { ShardKitError } from '../errors.js';
import type { MoveRecord } from '../topology/shard-map.js';

/**
 * The order of an engine's undo (an abort before the switch): the target's part first (its copy
 * never served), then the source's (the fence lifted). A target that cannot be reached (its
 * master died during the catch-up) does not keep the source fenced: the source's part runs
 * anyway, and then the target's failure is reported, so the runner leaves the move 'aborting'
 * and `--abort` is run again once the target is back (each part is re-runnable).
 */
export async function undoTargetThenSource(move: MoveRecord, target: () => Promise<void>, source: () => Promise<void>): Promise<void> {
  let targetFailed: unknown;
  try {
    await target();
  } catch (err) {
    targetFailed = err;
  }
  await source();
  if (targetFailed !== undefined) {
    throw new ShardKitError('SHARD_UNAVAILABLE', `the source ${move.source.master} serves shards ${move.range[0]}..${move.range[1]} again, but the target ${move.target.master} could not be cleaned up (${(targetFailed as Error).message}): run shards move --abort again once it is up`, { cause: targetFailed });
  }
}
