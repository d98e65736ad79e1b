import { ShardKitError } from '../../errors.js';
import { abortMove, addMove, advanceMove, forgetMove, freezeMove, switchMove } from '../../moves/move-state.js';
import { mergeAdjacent, promoteSlave } from '../../topology/map-edits.js';
import { ShardMap, type ShardMapJson, type ShardRange } from '../../topology/shard-map.js';

/**
 * The range freeze of a planned failover (issue #18 step 1), written with the moves' machinery
 * (src/moves/move-state.ts, kind 'failover'): services hold writes to a frozen object range up to
 * the hold budget instead of failing them while the master is read-only, and release them on the
 * map that names the new master. Mod-shard ranges are not frozen themselves: the MyRocks
 * wide-column engine and the kit's lookups hold writes to the mod shards of a host under failover
 * by this record (modShardFreeze in src/topology/freeze-hold.ts). A host that masters no object
 * range gets no record, so its lookups meet the read-only fence (retryable SHARD_UNAVAILABLE).
 *
 * Every function here is a pure map transition for casMoveState().
 */

/** Hold budget of a failover freeze (ms): the write pause the services absorb before answering SHARD_MOVING. */
export const DEFAULT_FAILOVER_HOLD_MS = 2000;

/** The failover records `master` left in the map (a crashed earlier run), by id. */
export function failoverIds(map: ShardMap, master: string): string[] {
  return map.moves().filter((m) => m.kind === 'failover' && m.source.master === master).map((m) => m.id);
}

/**
 * The records of an earlier failover of `master` that can be lifted: those whose hold budget ran
 * out (services already ignore them; the run that wrote them crashed or is stuck). A record still
 * within its budget belongs to a failover in progress: SHARD_FROZEN, nothing changed.
 */
export function staleFailoverIds(map: ShardMap, master: string, now = Date.now()): string[] {
  const mine = map.moves().filter((m) => m.kind === 'failover' && m.source.master === master);
  const live = mine.find((m) => now < m.updatedAt + m.holdMs);
  if (live !== undefined) {
    throw new ShardKitError('SHARD_FROZEN', `a failover of ${master} is in progress (${live.id}, hold budget ${live.holdMs} ms): wait for it, or retry after its budget if it crashed`, { details: { moveId: live.id } });
  }
  return mine.map((m) => m.id);
}

/** Records one failover move per object range `master` masters and freezes each (services hold writes from now on). */
export function freezeForFailover(map: ShardMap, master: string, slave: string, options: { holdMs: number; now?: number; refuseMoveTargets?: boolean }): ShardMapJson {
  const now = options.now ?? Date.now();
  if (options.refuseMoveTargets) refuseMoveTarget(map, master);
  const spans = map.objectRanges().filter((r) => r.master === master).map((r) => ({ first: r.range[0], last: r.range[1] }));
  let json = map.toJSON();
  for (const span of spans) {
    const id = `failover-${span.first}-${span.last}-${now.toString(36)}`;
    const added = ShardMap.fromJSON(addMove(ShardMap.fromJSON(json), { span, target: { master: slave, slave: master }, kind: 'failover', holdMs: options.holdMs, id, now }));
    json = freezeMove(added, id, now, ['started']);
  }
  return json;
}

/**
 * THE compare-and-set of a planned failover: each frozen object range switches to the slave (the
 * old master becomes its slave) and its record is forgotten, and the mod-shard ranges of `master`
 * are promoted the same way, all in one map version. Refused (VERSION_CONFLICT) when a range is
 * no longer frozen by this failover on `master`.
 */
export function switchFailover(map: ShardMap, master: string, ids: readonly string[], options: { now?: number; promoteUnfrozen?: boolean } = {}): ShardMapJson {
  const now = options.now ?? Date.now();
  let current = map;
  for (const id of ids) {
    current = ShardMap.fromJSON(advanceMove(current, id, ['frozen'], 'fenced', undefined, now));
    current = ShardMap.fromJSON(switchMove(current, id, now));
    current = ShardMap.fromJSON(forgetMove(current, id));
  }
  const promote = (r: ShardRange): ShardRange => (r.master !== master || r.slave === undefined ? r : { range: r.range, master: r.slave, slave: master, ...(r.open !== undefined ? { open: r.open } : {}) });
  const json = current.toJSON();
  const leftOver = json.ranges.filter((r) => r.master === master);
  if (leftOver.length > 0 && options.promoteUnfrozen) return { ...json, ranges: mergeAdjacent(json.ranges.map(promote)), modShards: { count: json.modShards.count, ranges: mergeAdjacent(json.modShards.ranges.map(promote)) } };
  if (leftOver.length > 0) {
    throw new ShardKitError('VERSION_CONFLICT', `object shards ${leftOver.map((r) => `${r.range[0]}..${r.range[1]}`).join(', ')} of ${master} were not frozen by this failover (the map changed under it): the switch is refused`);
  }
  return { ...json, modShards: { count: json.modShards.count, ranges: mergeAdjacent(json.modShards.ranges.map(promote)) } };
}

/** Lifts the freezes and forgets the records of `ids` (those still in the map): the master serves as before. */
export function releaseFailover(map: ShardMap, ids: readonly string[]): ShardMapJson {
  let current = map;
  for (const id of ids) if (current.move(id) !== undefined) current = ShardMap.fromJSON(abortMove(current, id));
  return current.toJSON();
}

/**
 * The promotion of `master`'s slave in `map` (an emergency failover, and the check before a
 * planned one), with the freeze a crashed planned failover of it left lifted in the same edit:
 * such a record would refuse the promotion (SHARD_FROZEN) and keep a dead master's pair down.
 */
export function promotedReleasingFreeze(map: ShardMap, master: string): ShardMapJson {
  return promoteSlave(ShardMap.fromJSON(releaseFailover(map, failoverIds(map, master))), master);
}

/**
 * MariaDB: a planned failover of a pair that an unfinished move copies to is refused. The move's
 * replication connection runs on the master past its read_only fence, and the mover keeps working
 * on that server (restarts the connection, lifts read_only on a new pair's master) between the
 * map's compare-and-sets: a failover under it would promote a slave without what the connection
 * applied, or find its fence lifted. In the compare-and-set of the freeze, so a move started
 * meanwhile is seen (and a move's start sees the failover: move-state.ts addMove).
 */
export function refuseMoveTarget(map: ShardMap, master: string): void {
  const m = map.moves().find((x) => x.kind === 'move' && x.phase !== 'switched' && (x.target.master === master || x.target.slave === master));
  if (m === undefined) return;
  throw new ShardKitError('VERSION_CONFLICT', `${master}'s pair is the target of move ${m.id} (phase ${m.phase}): a planned failover would fence it under the move's copy; abort the move (shards move --abort) or let it finish, then fail over (--emergency does not wait: the move then aborts)`, { details: { moveId: m.id } });
}
