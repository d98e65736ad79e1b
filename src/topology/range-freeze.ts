import type { RangeFreeze, ShardMap } from './shard-map.js';

/**
 * The freeze a service must honour for `shard` at wall-clock `now`, or undefined: no freeze, or
 * one older than its hold budget. Ignoring an old freeze is what keeps a crashed mover from
 * blocking writes: past the budget, writes go to the map's master again (and meet the fence if
 * the mover got that far, which turns them into SHARD_MOVING, never into a write on the old host).
 */
export function activeFreeze(map: ShardMap, shard: number, now: number = Date.now()): RangeFreeze | undefined {
  const f = map.freezeOf(shard);
  if (f === undefined) return undefined;
  return now < f.frozenAt + f.holdMs ? f : undefined;
}
